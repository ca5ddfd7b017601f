// The terminal tab: xterm.js over `GET /agents/{id}/terminal` (a WebSocket:
// binary frames are the terminal's raw bytes both ways; text frames are
// JSON: `resize` from here, `ready` / `exit` / `error` from the agent). The
// browser's upgrade carries the session cookie. Loaded only when the tab
// opens, so the rest of the page stays small. After a lost connection it
// reattaches to the same session from the last offset it showed.

import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";

import { agentPath } from "./api";
import { h } from "./dom";

export function terminalView(agent: string, backend: "light" | "computer"): HTMLElement {
  const screen = h("div", { class: "terminal", "data-backend": backend });
  const status = h("p", { class: "status", role: "status" }, "connecting…");
  const el = h("div", { class: "panel" }, status, screen);
  if (!document.querySelector('link[href="./xterm.css"]')) {
    document.head.append(h("link", { rel: "stylesheet", href: "./xterm.css" }));
  }
  const term = new Terminal({ cursorBlink: true, fontSize: 13, convertEol: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  let session: string | null = null;
  let offset = 0;
  let ws: WebSocket | null = null;
  let ended = false;
  const encoder = new TextEncoder();

  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = new URLSearchParams({ backend, cols: String(term.cols), rows: String(term.rows) });
    if (session) {
      query.set("session", session);
      query.set("from", String(offset));
    }
    const socket = new WebSocket(`${scheme}//${location.host}${agentPath(agent, "/terminal")}?${query}`);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onmessage = (event) => {
      if (typeof event.data === "string") {
        const message = JSON.parse(event.data);
        if (message.type === "ready") {
          session = message.session;
          offset = message.offset ?? offset;
          status.textContent = `${backend === "light" ? "light shell" : "computer"} · session ${session}`;
        } else if (message.type === "exit") {
          ended = true;
          status.textContent = `session ended (${message.reason ?? "exited"}${message.code !== undefined && message.code !== null ? `, status ${message.code}` : ""})`;
        } else if (message.type === "error") {
          status.textContent = `${message.code ?? "error"}: ${message.message ?? JSON.stringify(message)}`;
        }
        return;
      }
      const bytes = new Uint8Array(event.data);
      offset += bytes.length;
      term.write(bytes);
    };
    socket.onclose = () => {
      if (ended || !el.isConnected) return;
      status.textContent = "connection lost: reconnecting…";
      setTimeout(connect, 1000);
    };
  };

  term.onData((data) => {
    if (ws?.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
  });
  term.onResize(({ cols, rows }) => {
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "resize", cols, rows }));
  });
  // Opened once the element is on the page (xterm measures it).
  requestAnimationFrame(() => {
    term.open(screen);
    fit.fit();
    new ResizeObserver(() => fit.fit()).observe(screen);
    connect();
    term.focus();
  });
  return el;
}
