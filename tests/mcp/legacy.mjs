// The official MCP TypeScript SDK, v1 (@modelcontextprotocol/sdk, which
// speaks protocol 2025-11-25 and older, not 2026-07-28), against the real
// Worker: initialize and a session, every tool kind, a detached job read by
// offset, a resource, a change made over HTTP arriving as a notification on
// the session's GET stream, a read-only token's view, and ending the session.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { bearer, env, exercise, httpTool, report, until } from "./common.mjs";

const e = env();
const transport = new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.token) });
const client = new Client({ name: "stead-e2e-v1", version: "1.0.0" });
const updates = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
await client.connect(transport);
assert.ok(transport.sessionId, "a session id");
const server = client.getServerVersion();
const tools = (await client.listTools()).tools.map((t) => t.name);
const done = await exercise(client, "v1");

// A change made over the HTTP API arrives on the session's stream.
const uri = "file:///e2e-v1/notes.md";
await client.subscribeResource({ uri });
// The GET stream opens after initialization; give it a moment to be there.
await new Promise((resolve) => setTimeout(resolve, 500));
await httpTool(e, "write", { path: "/e2e-v1/notes.md", content: "changed over HTTP\n" });
await until("the resources/updated notification", () => updates.includes(uri));

// A read-only token sees no tool that writes, and cannot write.
const readOnly = new Client({ name: "stead-e2e-v1-reader", version: "1.0.0" });
const readTransport = new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.readToken) });
await readOnly.connect(readTransport);
const readerTools = (await readOnly.listTools()).tools.map((t) => t.name);
const refused = await readOnly.callTool({ name: "write", arguments: { path: "/e2e-v1/notes.md", content: "no" } });
assert.equal(refused.isError, true);
const after = await client.readResource({ uri });
await readOnly.close();

const sessionId = transport.sessionId;
await transport.terminateSession();
await client.close();
report({
  protocol: transport.protocolVersion,
  session: sessionId,
  server: server.name,
  tools,
  ...done,
  updates,
  readerTools,
  refused: refused.structuredContent.error.code,
  afterRefusal: after.contents[0].text,
});
