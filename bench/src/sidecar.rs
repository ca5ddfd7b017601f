//! A request to a real container's port the way workerd sends one: an
//! HTTP `CONNECT` to the container's sidecar (its ingress, port 39001,
//! which Docker publishes on the host) naming the port in `X-Dst-Addr`,
//! then the request inside the tunnel.
//!
//! For scale only: on the development machines the sidecar is a stand-in
//! (`../shared/container-env`, Python), not Cloudflare's, and the port
//! route crosses it, so the route's figure holds its cost. Sending the same
//! request through it from the host, with a fresh tunnel per request,
//! shows how much of the route is the sidecar and not stead.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};

use stead_harness::computer::docker;

/// The sidecar's ingress port inside its container.
const INGRESS_PORT: &str = "39001/tcp";

/// The ingress of one sidecar, for one port of its app container.
pub struct Ingress {
    /// Where Docker publishes the ingress on the host.
    published: SocketAddr,
    /// The app's port the tunnels lead to.
    port: u16,
}

impl Ingress {
    /// The ingress of the sidecar container `sidecar`, leading to `port`.
    pub fn find(sidecar: &str, port: u16) -> Result<Ingress, String> {
        // One line per host address: `0.0.0.0:32771`, `[::]:32771`.
        let mapped = docker(&["port", sidecar, INGRESS_PORT])?;
        let host_port = mapped
            .lines()
            .find_map(|line| line.rsplit_once(':')?.1.trim().parse::<u16>().ok())
            .ok_or_else(|| format!("{sidecar} publishes no {INGRESS_PORT}: {mapped:?}"))?;
        Ok(Ingress {
            published: SocketAddr::from((Ipv4Addr::LOCALHOST, host_port)),
            port,
        })
    }

    /// `GET path` in a fresh tunnel; the answer's body, or why there is
    /// none.
    pub fn get(&self, path: &str) -> Result<Vec<u8>, String> {
        let fail = |what: &str, e: std::io::Error| format!("sidecar ingress: {what}: {e}");
        let mut stream = TcpStream::connect(self.published).map_err(|e| fail("connect", e))?;
        stream.set_nodelay(true).map_err(|e| fail("nodelay", e))?;
        let target = format!("127.0.0.1:{}", self.port);
        let connect =
            format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nX-Dst-Addr: {target}\r\n\r\n");
        stream
            .write_all(connect.as_bytes())
            .map_err(|e| fail("CONNECT", e))?;
        let head = read_head(&mut stream).map_err(|e| fail("CONNECT answer", e))?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("sidecar ingress refused the tunnel: {head:?}"));
        }
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .map_err(|e| fail("request", e))?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .map_err(|e| fail("answer", e))?;
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("sidecar ingress: an answer without a head")?;
        if !answer.starts_with(b"HTTP/1.1 200") {
            let head = String::from_utf8_lossy(&answer[..split]);
            return Err(format!("sidecar ingress: the server answered {head:?}"));
        }
        Ok(answer[split + 4..].to_vec())
    }
}

/// Reads an HTTP head byte by byte, so nothing after it is consumed.
fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}
