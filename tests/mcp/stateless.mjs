// The official MCP TypeScript SDK, v2 (@modelcontextprotocol/client, which
// speaks protocol 2026-07-28), against the real Worker: the version
// negotiated by server/discover, every tool kind, a detached job read by
// offset, a resource, a change made over HTTP arriving on a
// subscriptions/listen stream, and a read-only token's view.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { bearer, env, exercise, httpTool, report, until } from "./common.mjs";

const e = env();
const modern = { versionNegotiation: { mode: "auto" } };
const client = new Client({ name: "stead-e2e-v2", version: "1.0.0" }, modern);
const updates = [];
client.setNotificationHandler("notifications/resources/updated", (n) => updates.push(n.params.uri));
await client.connect(new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.token) }));
const era = client.getProtocolEra();
const version = client.getNegotiatedProtocolVersion();
const discovered = client.getDiscoverResult();
const tools = (await client.listTools()).tools.map((t) => t.name);
const done = await exercise(client, "v2");

// A change made over the HTTP API arrives on the listen stream.
const uri = "file:///e2e-v2/notes.md";
const subscription = await client.listen({ resourceSubscriptions: [uri] });
await httpTool(e, "write", { path: "/e2e-v2/notes.md", content: "changed over HTTP\n" });
await until("the resources/updated notification", () => updates.includes(uri));
await subscription.close();

// A read-only token sees no tool that writes, and cannot write.
const readOnly = new Client({ name: "stead-e2e-v2-reader", version: "1.0.0" }, modern);
await readOnly.connect(new StreamableHTTPClientTransport(new URL(e.url), { requestInit: bearer(e.readToken) }));
const readerTools = (await readOnly.listTools()).tools.map((t) => t.name);
const refused = await readOnly.callTool({ name: "write", arguments: { path: "/e2e-v2/notes.md", content: "no" } });
assert.equal(refused.isError, true);
const after = await client.readResource({ uri });
await readOnly.close();
await client.close();
report({
  era,
  protocol: version,
  supportedVersions: discovered?.supportedVersions,
  honored: subscription.honoredFilter,
  tools,
  ...done,
  updates,
  readerTools,
  refused: refused.structuredContent.error.code,
  afterRefusal: after.contents[0].text,
});
