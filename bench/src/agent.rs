//! The agent under test and the requests sent to it.

use std::io::Read;

use serde_json::Value;
use stead_harness::{Client, Reply};

/// A request prepared ahead of time, so only sending it is timed.
pub struct Call {
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

/// One agent on a running Worker. All requests share the client's
/// keep-alive connection.
pub struct Agent {
    client: Client,
    id: String,
}

impl Agent {
    /// Creates agent `id`.
    pub fn create(client: Client, id: String) -> Agent {
        Agent::try_create(client, id).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Creates agent `id`, or says why it could not.
    pub fn try_create(client: Client, id: String) -> Result<Agent, String> {
        let reply = client.create(&id);
        check(&reply, &format!("create agent {id}"))?;
        Ok(Agent { client, id })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// `POST /agents/{id}/ping`: reaches the agent's Durable Object and does
    /// nothing; the transport floor.
    pub fn ping_call(&self) -> Call {
        self.route_call("POST", "ping", Vec::new())
    }

    /// `POST /_bench/bare/{id}`: reaches the agent's Durable Object and is
    /// answered there at once, before any of the agent's code (local
    /// development only); the floor under the ping.
    pub fn bare_call(&self) -> Call {
        Call {
            method: "POST",
            path: format!("/_bench/bare/{}", self.id),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `POST /agents/{id}/{tool}` with a JSON body.
    pub fn tool_call(&self, tool: &str, body: &Value) -> Call {
        self.route_call("POST", tool, body.to_string().into_bytes())
    }

    /// `method /agents/{id}/{route}` with a raw body.
    pub fn route_call(&self, method: &'static str, route: &str, body: Vec<u8>) -> Call {
        Call {
            method,
            path: format!("/agents/{}/{route}", self.id),
            headers: Vec::new(),
            body,
        }
    }

    /// `POST /agents/{id}/mcp` of JSON-RPC `message` with `headers`.
    pub fn mcp_call(&self, headers: Vec<(&'static str, String)>, message: &Value) -> Call {
        Call {
            method: "POST",
            path: format!("/agents/{}/mcp", self.id),
            headers,
            body: message.to_string().into_bytes(),
        }
    }

    /// Sends a prepared call; the reply is not checked.
    pub fn send(&self, call: &Call) -> Reply {
        let headers: Vec<(&str, &str)> = call
            .headers
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        self.client
            .send_with(call.method, &call.path, &headers, &call.body)
    }

    /// Runs a tool and returns its JSON answer; panics unless it succeeds.
    pub fn tool(&self, tool: &str, body: &Value) -> Value {
        let reply = self.send(&self.tool_call(tool, body));
        expect_success(&reply, &format!("{tool} {body}"));
        reply.json()
    }

    /// Streams `len` bytes from `reader` into the file at `path` with a
    /// declared length; panics unless it succeeds.
    pub fn upload_sized(&self, path: &str, len: u64, reader: impl Read + Send + Sync + 'static) {
        let reply = self.client.upload_sized(&self.id, path, len, reader);
        check(&reply, &format!("upload {path}")).unwrap_or_else(|error| panic!("{error}"));
    }

    /// Streams `reader` into the file at `path`, or says why it could not.
    pub fn try_upload(
        &self,
        path: &str,
        reader: impl Read + Send + Sync + 'static,
    ) -> Result<(), String> {
        let reply = self.client.upload(&self.id, path, "", reader);
        check(&reply, &format!("upload {path}"))
    }

    /// Streams the file at `path` out; panics unless it succeeds.
    pub fn download(&self, path: &str) -> Box<dyn Read + Send + Sync> {
        let (status, body) = self.client.download(&self.id, path);
        assert!(
            (200..300).contains(&status),
            "download {path}: HTTP {status}"
        );
        body
    }

    /// Deletes the agent and its workspace.
    pub fn delete(self) {
        let reply = self
            .client
            .send("DELETE", &format!("/agents/{}", self.id), b"");
        expect_success(&reply, &format!("delete agent {}", self.id));
    }
}

/// Panics with the reply's body unless its status is 2xx: a benchmark of
/// failing requests would measure nothing.
pub fn expect_success(reply: &Reply, what: &str) {
    check(reply, what).unwrap_or_else(|error| panic!("{error}"));
}

/// `Err` with the status and body unless the reply's status is 2xx.
pub fn check(reply: &Reply, what: &str) -> Result<(), String> {
    if (200..300).contains(&reply.status) {
        return Ok(());
    }
    Err(format!(
        "{what}: HTTP {}: {}",
        reply.status,
        String::from_utf8_lossy(&reply.body)
    ))
}
