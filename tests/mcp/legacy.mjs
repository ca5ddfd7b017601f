// The official MCP TypeScript SDK, v1 (@modelcontextprotocol/sdk, which
// speaks the session revisions, not 2026-07-28), against the real Worker:
// initialize and a session, every tool kind, a detached job read by offset,
// a resource, a change made over HTTP arriving as a notification on the
// session's GET stream, a read-only token's view, and ending the session.
//
// Which release runs is STEAD_MCP_SDK (a package name: the current one, or
// an older release installed under an alias such as mcp-sdk-2025-06-18,
// whose newest protocol is that revision); STEAD_LABEL names its files.
// Every request is watched on the way out, so the summary tells which
// version was agreed and which MCP-Protocol-Version headers were sent.
import assert from "node:assert/strict";
import { bearer, env, exercise, httpTool, report, until } from "./common.mjs";

const sdk = process.env.STEAD_MCP_SDK ?? "@modelcontextprotocol/sdk";
const label = process.env.STEAD_LABEL ?? "v1";
const { Client } = await import(`${sdk}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/client/streamableHttp.js`);
const { ResourceUpdatedNotificationSchema } = await import(`${sdk}/types.js`);

const e = env();
const versionHeaders = new Set();
let agreed;
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = String(input instanceof Request ? input.url : input);
  // initialize is sent before any version is agreed: its header is not
  // counted.
  const initialize = typeof init.body === "string" && init.body.includes('"method":"initialize"');
  if (url === e.url && !initialize) {
    versionHeaders.add(new Headers(init.headers).get("mcp-protocol-version") ?? "none");
  }
  const response = await plainFetch(input, init);
  if (initialize && agreed === undefined && response.ok) {
    const text = await response.clone().text();
    const json = JSON.parse(text.startsWith("{") ? text : text.split("data: ")[1]);
    agreed = json.result.protocolVersion;
  }
  return response;
};

const transport = new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.token) });
const client = new Client({ name: `stead-e2e-${label}`, version: "1.0.0" });
const updates = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
await client.connect(transport);
assert.ok(transport.sessionId, "a session id");
const server = client.getServerVersion();
const tools = (await client.listTools()).tools.map((t) => t.name);
const done = await exercise(client, label);

// A change made over the HTTP API arrives on the session's stream.
const uri = `file:///e2e-${label}/notes.md`;
await client.subscribeResource({ uri });
// The GET stream opens after initialization; give it a moment to be there.
await new Promise((resolve) => setTimeout(resolve, 500));
await httpTool(e, "write", { path: `/e2e-${label}/notes.md`, content: "changed over HTTP\n" });
await until("the resources/updated notification", () => updates.includes(uri));

// A read-only token sees no tool that writes, and cannot write.
const readOnly = new Client({ name: `stead-e2e-${label}-reader`, version: "1.0.0" });
const readTransport = new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.readToken) });
await readOnly.connect(readTransport);
const readerTools = (await readOnly.listTools()).tools.map((t) => t.name);
const refused = await readOnly.callTool({ name: "write", arguments: { path: `/e2e-${label}/notes.md`, content: "no" } });
assert.equal(refused.isError, true);
const after = await client.readResource({ uri });
await readOnly.close();

const sessionId = transport.sessionId;
await transport.terminateSession();
await client.close();
report({
  protocol: agreed,
  versionHeaders: [...versionHeaders].sort(),
  session: sessionId,
  server: server.name,
  tools,
  ...done,
  updates,
  readerTools,
  refused: refused.structuredContent.error.code,
  afterRefusal: after.contents[0].text,
});
