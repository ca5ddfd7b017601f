// Served by a dev server on the agent's computer, inline in its page
// (tests/inspector.rs puts it there; on the API's origin the port route's
// sandbox gives the page an opaque origin, from which a script file would
// not even load): what an untrusted page can get of the inspector's
// session. It reports in #out as JSON.
(async () => {
const out = document.getElementById("out");
const agent = document.body.dataset.agent;
// The inspector is on the parent host (localhost), the port on a subdomain.
const inspector = `${location.protocol}//${location.host.replace(/^[^.]+\.(?=localhost)/, "")}`;

async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    return `blocked: ${error.name}`;
  }
}

const found = {};
try {
  found.cookie = document.cookie;
} catch (error) {
  // A sandboxed page has no cookies at all.
  found.cookie = `blocked: ${error.name}`;
}
found.session = await attempt(async () => (await fetch(`${inspector}/ui/session`, { credentials: "include" })).text());
found.info = await attempt(async () => (await fetch(`${inspector}/agents/${agent}`, { credentials: "include" })).text());
found.write = await attempt(async () => {
  await fetch(`${inspector}/agents/${agent}/write`, {
    method: "POST",
    mode: "no-cors",
    credentials: "include",
    headers: { "content-type": "text/plain" },
    body: JSON.stringify({ path: "/stolen", content: "x" }),
  });
  return "sent";
});
found.ws = await new Promise((resolve) => {
  const ws = new WebSocket(`${inspector.replace(/^http/, "ws")}/agents/${agent}/ws`);
  ws.onopen = () => resolve("open");
  ws.onerror = () => resolve("refused");
});
out.textContent = JSON.stringify(found);
})();
