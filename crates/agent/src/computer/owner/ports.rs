//! Requests to the ports of the processes the computer runs
//! ([`PORTS_PREFIX`]`{port}{path}`): passed on as they came, body
//! streamed and the answer (a WebSocket upgrade included) handed back
//! whole. A port request counts as use of the computer, but never starts
//! one: the process serving the port ran on the container that is there.
//!
//! On a container the dev server is reached as `localhost`, the host name
//! dev servers allow; locally, on the local program's machine.
//!
//! [`PORTS_PREFIX`]: stead_sync::owner::PORTS_PREFIX

use stead_sync::ErrorCode;

use super::{
    not_running, unavailable, with_query, Call, ContainerHost, Hop, Outgoing, Owner, Provider,
    Record, Reply,
};
use crate::error::HostError;

/// Where a port request goes: the port, and the path with its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PortTarget {
    pub(super) port: u16,
    pub(super) target: String,
}

/// Reads `rest` (what follows [`PORTS_PREFIX`]: `{port}{path}`) and the
/// query; `Err` says why it names no port.
pub(super) fn port_target(rest: &str, query: Option<&str>) -> Result<PortTarget, String> {
    let (number, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let port = number
        .parse::<u16>()
        .map_err(|_| format!("{number:?} is not a port"))?;
    let tail = if tail.is_empty() { "/" } else { tail };
    Ok(PortTarget {
        port,
        target: with_query(tail, query),
    })
}

/// The host of the local program's machine, from its URL.
fn local_host(base: &str) -> Result<String, HostError> {
    let url = url::Url::parse(base).map_err(|e| HostError::new("read COMPUTER_DEV_URL", e))?;
    Ok(url.host_str().unwrap_or("127.0.0.1").to_string())
}

impl<H: ContainerHost> Owner<H> {
    /// Forwards `call` (whose platform request is `request`) to a port of
    /// the computer: `rest` is `{port}{path}` (see [`PORTS_PREFIX`]).
    pub(super) async fn forward_port(
        &self,
        rest: &str,
        call: &Call,
        request: &H::Request,
    ) -> Result<Reply<H::Answer>, HostError> {
        let PortTarget { port, target } = match port_target(rest, call.query.as_deref()) {
            Ok(to) => to,
            Err(message) => return Ok(Reply::error(400, ErrorCode::InvalidRequest, &message)),
        };
        if let Some(refused) = self.host.admit_port(port, request).await? {
            return Ok(Reply::Passed(refused));
        }
        let (hop, url) = match self.provider() {
            Provider::Missing => return Ok(unavailable()),
            Provider::Local { base, .. } => {
                let host = local_host(&base)?;
                (Hop::Network, format!("http://{host}:{port}{target}"))
            }
            Provider::Container => {
                let record = self.load().await?;
                if record.secret().is_none() || !self.host.running() {
                    return Ok(not_running(record.released()));
                }
                let now = self.host.now_ms();
                let used = |record: &mut Record| {
                    record.last_used_ms = record.last_used_ms.max(Some(now));
                };
                self.change(used).await?;
                (
                    Hop::Container { port },
                    format!("http://localhost:{port}{target}"),
                )
            }
        };
        let outgoing = Outgoing::Port {
            url,
            headers: call.port_headers(),
            request,
        };
        Ok(Reply::Passed(self.host.send(hop, outgoing).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_path_names_the_port_and_what_follows() {
        let to = |rest, query| port_target(rest, query).unwrap();
        assert_eq!(to("3000", None).target, "/");
        assert_eq!(to("3000/a/b", Some("x=1")).target, "/a/b?x=1");
        assert_eq!(to("3000", Some("x=1")).target, "/?x=1");
        assert_eq!(to("65535/", None).port, 65535);
        assert_eq!(
            port_target("65536/", None).unwrap_err(),
            "\"65536\" is not a port"
        );
        assert!(port_target("", None).is_err());
        assert!(port_target("http/", None).is_err());
        assert_eq!(local_host("http://10.0.0.2:8787/").unwrap(), "10.0.0.2");
        assert!(local_host("not a url").is_err());
    }
}
