//! The MCP protocol revisions served, and the `_meta` keys of the current
//! one.

/// A protocol revision this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-11-25: `initialize`, sessions (`Mcp-Session-Id`), a GET stream
    /// for server-sent notifications, `resources/subscribe`.
    Sessions,
    /// 2026-07-28: stateless; every request carries its version and client
    /// capabilities in `_meta`; `server/discover`; `subscriptions/listen`.
    Stateless,
}

impl Revision {
    /// Newest first, as `supportedVersions` lists them.
    pub const ALL: [Revision; 2] = [Revision::Stateless, Revision::Sessions];

    pub fn version(self) -> &'static str {
        match self {
            Revision::Sessions => "2025-11-25",
            Revision::Stateless => "2026-07-28",
        }
    }

    /// The revision called `version`.
    pub fn from_version(version: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.version() == version)
    }

    /// Every version served, newest first.
    pub fn versions() -> Vec<&'static str> {
        Revision::ALL.iter().map(|r| r.version()).collect()
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
