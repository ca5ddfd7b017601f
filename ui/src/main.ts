// The stead inspector: sign in with a token once (it becomes an HttpOnly
// session cookie), then look at and steer an agent's workspace.

import { ApiError, Session, agentPath, json, session, signIn, signOut, whenSignedOut } from "./api";
import { bytes, clear, h, when } from "./dom";
import { FilesView } from "./files";
import { AgentSocket } from "./socket";
import { tabs } from "./tabs";
import { TimelineView } from "./timeline";
import { JobsView, ProcessesView, SchedulesView } from "./work";

const app = document.getElementById("app")!;

/** The sign-in form; resolves once a session is open. `reason` says why it
 * is shown (an expired session, a wrong token). */
function signInForm(reason: string | null, dialog: boolean): Promise<Session> {
  return new Promise((resolve) => {
    const token = h("input", { type: "password", name: "token", autocomplete: "off", placeholder: "stk_… or the admin token", "aria-label": "token", required: true });
    const message = h("p", { class: "error", role: "alert" }, reason ?? "");
    const form = h("form", { class: "sign-in" },
      h("h1", {}, "stead inspector"),
      h("p", {}, "Paste a token. It is exchanged for a session this page's scripts cannot read, and is not kept."),
      token, h("button", { type: "submit" }, "Sign in"), message);
    const holder = dialog ? h("div", { class: "overlay" }, form) : form;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      message.textContent = "";
      try {
        const opened = await signIn(token.value);
        token.value = "";
        holder.remove();
        resolve(opened);
      } catch (error) {
        const e = error as ApiError;
        message.textContent = signInError(e);
      }
    });
    if (dialog) document.body.append(holder);
    else clear(app, holder);
    token.focus();
  });
}

function signInError(error: ApiError): string {
  switch (error.code) {
    case "UNAUTHORIZED": return "That token is not valid here. Check it and paste it again.";
    case "TOKEN_EXPIRED": return "That token has expired: mint a new one.";
    case "TOKEN_REVOKED": return "That token has been revoked: mint a new one.";
    case "AGENT_NOT_FOUND": return `The token's agent does not exist: ${error.message}`;
    default: return error.message;
  }
}

let current: Session;

async function main(): Promise<void> {
  const existing = await session();
  current = existing ?? (await signInForm(null, false));
  // A session that ends while the page is open: ask again in a dialog over
  // the page, so nothing typed is lost, then carry on.
  let asking: Promise<Session> | null = null;
  whenSignedOut(async (error) => {
    asking ??= signInForm(`Your session ended (${error.message}). Sign in again to carry on; nothing you typed is lost.`, true);
    current = await asking;
    asking = null;
  });
  route();
  window.addEventListener("hashchange", route);
}

function topBar(...extra: (Node | string)[]): HTMLElement {
  const who = current.kind === "admin" ? "admin" : `token for ${current.agent} (${(current.scopes ?? []).join(", ")})`;
  const readOnly = current.kind === "token" && !(current.scopes ?? []).includes("write");
  return h("header", { class: "top" },
    h("a", { href: "#", class: "brand" }, "stead"), ...extra,
    h("span", { class: "who" }, who, readOnly ? h("span", { class: "badge", "data-read-only": "true" }, "read-only") : null),
    h("button", { class: "sign-out", onclick: async () => { await signOut(); location.hash = ""; location.reload(); } }, "Sign out"));
}

let socket: AgentSocket | null = null;

function route(): void {
  socket?.close();
  socket = null;
  const agent = decodeURIComponent(location.hash.replace(/^#\/?agents\//, "").split("/")[0] ?? "");
  if (location.hash.startsWith("#/agents/") && agent) return void showAgent(agent);
  if (current.kind === "token" && current.agent) {
    location.hash = `#/agents/${encodeURIComponent(current.agent)}`;
    return;
  }
  void showAgents();
}

async function showAgents(): Promise<void> {
  const list = h("tbody");
  clear(app, topBar(), h("main", { class: "agents" }, h("h1", {}, "Agents"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "agent"), h("th", {}, "created"), h("th", {}, "files"), h("th", {}, "stored"), h("th", {}, "database"))), list)));
  let cursor: string | null = null;
  do {
    const page: any = await json(`/agents?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    for (const agent of page.agents) {
      const usage = agent.usage ?? {};
      list.append(h("tr", {},
        h("td", {}, h("a", { href: `#/agents/${encodeURIComponent(agent.id)}`, "data-agent": agent.id }, agent.id)),
        h("td", {}, when(agent.created_ms)),
        h("td", {}, String(usage.files ?? "")),
        h("td", {}, bytes(usage.stored_bytes ?? 0)),
        h("td", {}, bytes(agent.database_bytes ?? 0))));
    }
    cursor = page.next_cursor;
  } while (cursor);
  if (!list.children.length) list.append(h("tr", {}, h("td", { colspan: "5" }, "No agents yet: create one with PUT /agents/{id}.")));
}

async function showAgent(agent: string): Promise<void> {
  // The views start reading at once; the agent's own answer, asked
  // meanwhile, says where the change feed starts, or that it is gone.
  const info = json(agentPath(agent));
  const live = h("span", { class: "live", "data-state": "connecting" }, "connecting");
  const opened = new AgentSocket(agent, info.then((answer) => answer.usage?.revision ?? null, () => null));
  socket = opened;
  opened.onState((state) => {
    live.dataset.state = state;
    live.textContent = state === "open" ? "live" : "reconnecting…";
  });
  info.catch((error: ApiError) => {
    opened.close();
    const gone = error.code === "AGENT_NOT_FOUND" ? `Agent ${agent} does not exist (deleted?).` : error.message;
    clear(app, topBar(), h("main", { class: "panel" }, h("p", { class: "error", role: "alert" }, gone)));
  });
  const views: [string, () => HTMLElement][] = [
    ["Files", () => new FilesView(agent, current, opened).el],
    ["Timeline", () => new TimelineView(agent, current, opened).el],
    ["Jobs", () => new JobsView(agent, current, opened).el],
    ["Processes", () => new ProcessesView(agent, current, opened).el],
    ["Schedules", () => new SchedulesView(agent).el],
    ["Terminal", () => lazyTerminal(agent)],
  ];
  clear(app, topBar(h("span", { class: "agent" }, agent), live), tabs(views));
}

/** The terminal tab, its code (xterm.js) fetched when first opened. */
function lazyTerminal(agent: string): HTMLElement {
  const holder = h("div", { class: "terminal-tab" });
  const pick = (backend: "light" | "computer") => async () => {
    const { terminalView } = await import("./terminal");
    holder.replaceChildren(terminalView(agent, backend));
  };
  holder.append(h("div", { class: "panel actions" },
    h("button", { class: "open-light", onclick: pick("light") }, "Light shell"),
    h("button", { class: "open-computer", onclick: pick("computer") }, "Computer")));
  return holder;
}

main().catch((error) => clear(app, h("p", { class: "error" }, `The inspector failed to start: ${error.message}`)));
