//! Where an outbound call's target is checked: the agent never calls into
//! the network it runs in.
//!
//! A schedule's webhook is a URL a token holder chose; unchecked, the
//! agent would be a probe of whatever its platform can reach (loopback
//! services, the private network, a cloud metadata endpoint), and the run
//! record would report what answered. So a target must be `http` or
//! `https`, and every address its host stands for must be public: a literal
//! address is checked as written (in any notation the URL standard
//! accepts), `localhost` names are refused outright, and any other name is
//! resolved (through the host, by the caller: this module does no I/O)
//! and each of its addresses checked. A name that
//! does not resolve is refused too. The agent never follows redirects (the
//! host's `post` does not), so a public target cannot bounce a call
//! inward. Targets are checked when a schedule is stored and again before
//! each call, since what a name resolves to can change.
//!
//! A workspace may allow private targets, for local development only: the
//! setting is accepted only where the host says it runs locally.
//!
//! What this cannot see: a name that resolves to a public address when
//! checked and a private one when the platform's fetch resolves it again
//! (DNS rebinding). On Workers, outbound fetches do not reach private
//! networks in the first place; the check is what keeps local and other
//! deployments honest.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host as UrlHost, Url};

/// Why a target is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{url:?} is not a URL: {reason}")]
    NotAUrl { url: String, reason: String },
    #[error("only http and https targets are called, not {scheme:?}")]
    Scheme { scheme: String },
    #[error("{host} is a local name")]
    LocalName { host: String },
    #[error("{host} is {address}, a {kind} address")]
    Private {
        host: String,
        address: IpAddr,
        kind: &'static str,
    },
    #[error("{host} could not be resolved: {reason}")]
    Unresolved { host: String, reason: String },
}

/// The kind of address `ip` is, when it is not a public one.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified (this network)",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private",
        (172, 16..=31, _) => "private",
        (169, 254, _) => "link-local (and cloud metadata)",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (192, 0, 0) => "IETF protocol",
        (192, 88, 99) => "deprecated 6to4 relay anycast",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

/// By the IANA registries: the IPv6 address space (only `2000::/3` is
/// global unicast; the rest is reserved, unique-local, link-local or
/// multicast) and the IPv6 special-purpose registry. A form that embeds an
/// IPv4 address (mapped, SIIT-translated, NAT64, 6to4) is what that address
/// is: a webhook to `::ffff:127.0.0.1` reaches loopback.
fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let embedded_v4 = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    Some(match segments {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        // IPv4-mapped (::ffff:0:0/96) and SIIT-translated
        // (::ffff:0:0:0/96, RFC 2765): the embedded address decides.
        [0, 0, 0, 0, 0, 0xffff, high, low] | [0, 0, 0, 0, 0xffff, 0, high, low] => {
            return non_public_v4(embedded_v4(high, low))
        }
        // NAT64's well-known prefix (64:ff9b::/96, RFC 6052) reaches the
        // embedded address; its local-use prefix (64:ff9b:1::/48, RFC
        // 8215) reaches a translator inside the operator's network.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => return non_public_v4(embedded_v4(high, low)),
        [0x64, 0xff9b, 1, ..] => "local-use IPv4/IPv6 translation",
        // 6to4 (2002::/16): the relay's IPv4 address follows the prefix.
        [0x2002, high, low, ..] => return non_public_v4(embedded_v4(high, low)),
        // Teredo (2001::/32) tunnels to an (obfuscated) IPv4 client, and
        // the rest of 2001::/23 is protocol assignments, not hosts.
        [0x2001, 0, ..] => "Teredo",
        [0x2001, second, ..] if second < 0x0200 => "IETF protocol assignment",
        [0x2001, 0x0db8, ..] => "documentation",
        [first, ..] if first & 0xfff0 == 0x3ff0 => "documentation",
        [0x5f00, ..] => "segment routing (SRv6)",
        [0x0100, 0, 0, 0, ..] => "discard-only",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique-local",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast",
        [first, ..] if first & 0xe000 != 0x2000 => "reserved (not global unicast)",
        _ => return None,
    })
}

/// What a URL's host is, before any resolution.
enum Target {
    Address(IpAddr),
    Name(String),
}

/// The checks that need no network: scheme, literal addresses, local names.
fn parse(url: &str) -> Result<(Url, Target), Refused> {
    let parsed = Url::parse(url).map_err(|e| Refused::NotAUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Refused::Scheme {
            scheme: parsed.scheme().to_string(),
        });
    }
    let target = match parsed.host() {
        Some(UrlHost::Ipv4(v4)) => Target::Address(IpAddr::V4(v4)),
        Some(UrlHost::Ipv6(v6)) => Target::Address(IpAddr::V6(v6)),
        Some(UrlHost::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(Refused::LocalName { host: name });
            }
            Target::Name(name)
        }
        None => {
            return Err(Refused::NotAUrl {
                url: url.to_string(),
                reason: "it has no host".into(),
            })
        }
    };
    Ok((parsed, target))
}

fn check_address(host: &str, address: IpAddr) -> Result<(), Refused> {
    match non_public(address) {
        Some(kind) => Err(Refused::Private {
            host: host.to_string(),
            address,
            kind,
        }),
        None => Ok(()),
    }
}

/// What remains to check of a target once its URL passed: nothing (a
/// public literal address), or the addresses its name resolves to.
pub enum Pending {
    Done,
    Resolve(String),
}

/// The checks of `url` that need no network (see the module docs): with
/// `allow_private`, only the scheme.
pub fn check_url(url: &str, allow_private: bool) -> Result<Pending, Refused> {
    let (parsed, target) = match parse(url) {
        Err(Refused::LocalName { .. }) if allow_private => return Ok(Pending::Done),
        other => other?,
    };
    if allow_private {
        return Ok(Pending::Done);
    }
    let shown = parsed.host_str().unwrap_or_default().to_string();
    match target {
        Target::Address(address) => check_address(&shown, address).map(|()| Pending::Done),
        Target::Name(name) => Ok(Pending::Resolve(name)),
    }
}

/// Checks what host `name` resolved to: every address must be public, and
/// there must be one.
pub fn check_resolved(name: &str, resolved: Result<Vec<IpAddr>, String>) -> Result<(), Refused> {
    let addresses = resolved.map_err(|reason| Refused::Unresolved {
        host: name.to_string(),
        reason,
    })?;
    if addresses.is_empty() {
        return Err(Refused::Unresolved {
            host: name.to_string(),
            reason: "no addresses".into(),
        });
    }
    addresses
        .into_iter()
        .try_for_each(|address| check_address(name, address))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<&'static str> {
        non_public(text.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for address in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            // Every IPv4-embedding form of a non-public address (issue 21:
            // the SIIT form and local-use NAT64 passed).
            "::ffff:0:7f00:1",
            "::ffff:0:10.0.0.1",
            "::ffff:0.0.0.0",
            "64:ff9b::7f00:1",
            "64:ff9b::169.254.169.254",
            "64:ff9b:1::1.1.1.1",
            "64:ff9b:1:abcd::1",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101::",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "3fff::1",
            "5f00::1",
            "100::1",
            "::1.1.1.1",
            "4000::1",
        ] {
            assert!(kind(address).is_some(), "{address} counted as public");
        }
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "::ffff:0:1.1.1.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2a00:1450::1",
        ] {
            assert_eq!(kind(address), None, "{address}");
        }
    }

    #[test]
    fn urls_are_read_as_the_url_standard_reads_them() {
        let literal = |url: &str| match parse(url) {
            Ok((_, Target::Address(address))) => Some(address),
            _ => None,
        };
        // Decimal, hex, octal and short forms all name loopback.
        for url in [
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::1]:8080/x",
            "http://[::ffff:7f00:1]/",
            "http://[::ffff:0:7f00:1]/",
            "http://[64:ff9b:1::a00:1]/",
        ] {
            let address = literal(url).unwrap_or_else(|| panic!("{url} not read as an address"));
            assert!(non_public(address).is_some(), "{url}");
        }
        for url in [
            "http://localhost:1/",
            "http://a.b.localhost/",
            "http://LOCALHOST./",
        ] {
            assert!(
                matches!(parse(url), Err(Refused::LocalName { .. })),
                "{url}"
            );
        }
        for url in ["file:///etc/passwd", "gopher://x/", "ftp://example.com/"] {
            assert!(matches!(parse(url), Err(Refused::Scheme { .. })), "{url}");
        }
        assert!(matches!(parse("not a url"), Err(Refused::NotAUrl { .. })));
    }
}
