// Work that outlives a connection: jobs with live output (followed by
// offset over the socket) and cancel; processes with their output, ports
// (opened on their own origin, never this page's) and share links (open,
// copy, revoke); schedules and hooks with their runs.

import { ApiError, Session, agentPath, can, json } from "./api";
import { clear, h, when } from "./dom";
import { AgentSocket } from "./socket";

function failed(el: HTMLElement, error: unknown): void {
  el.className = "status error";
  el.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
}

function output(): HTMLElement {
  return h("pre", { class: "output", "aria-label": "output" });
}

function appendPiece(out: HTMLElement, stream: string, data: string): void {
  const stick = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
  out.append(h("span", { class: stream }, data));
  if (stick) out.scrollTop = out.scrollHeight;
}

export class JobsView {
  readonly el: HTMLElement;
  private list = h("tbody");
  private detail = h("section", { class: "job" }, h("p", { class: "hint" }, "Pick a job to follow its output."));
  private status = h("p", { class: "status", role: "status" });
  private unfollow: (() => void) | null = null;

  constructor(private readonly agent: string, private readonly session: Session, private readonly socket: AgentSocket) {
    const command = h("input", { placeholder: "a command to run as a job", "aria-label": "command", size: 40 });
    const runner = can(session, "exec:shell") || can(session, "exec:computer")
      ? h("form", { class: "actions", onsubmit: (event: Event) => { event.preventDefault(); void this.run(command); } },
          command, h("button", { type: "submit" }, "Run as job"))
      : null;
    this.el = h("div", { class: "columns panel" },
      h("div", {}, runner, this.status, h("button", { onclick: () => void this.load() }, "Refresh"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "job"), h("th", {}, "command"), h("th", {}, "state"), h("th", {}, "started"))), this.list)),
      this.detail);
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const jobs: any[] = (await json(agentPath(this.agent, "/jobs?limit=100"))).jobs;
      clear(this.list, jobs.map((job) => h("tr", { "data-job": String(job.id) },
        h("td", {}, h("button", { class: "open-job", onclick: () => void this.open(job.id) }, `#${job.id}`)),
        h("td", {}, h("code", {}, job.command)),
        h("td", { class: "state" }, job.state + (job.exit_code !== null && job.exit_code !== undefined ? ` (${job.exit_code})` : "")),
        h("td", {}, when(job.created_ms)))));
    } catch (error) {
      failed(this.status, error);
    }
  }

  private async run(command: HTMLInputElement): Promise<void> {
    try {
      const started = await json(agentPath(this.agent, "/exec"), "POST", { command: command.value, detach: true });
      command.value = "";
      await this.load();
      await this.open(started.job.id);
    } catch (error) {
      failed(this.status, error);
    }
  }

  async open(id: number): Promise<void> {
    this.unfollow?.();
    const job = (await json(agentPath(this.agent, `/jobs/${id}`))).job;
    const out = output();
    const state = h("span", { class: "job-state", "data-state": job.state }, job.state);
    const cancel = can(this.session, "exec:shell") || can(this.session, "exec:computer")
      ? h("button", { class: "cancel", onclick: async () => {
          try { await json(agentPath(this.agent, `/jobs/${id}/cancel`), "POST"); } catch (error) { failed(this.status, error); }
        } }, "Cancel")
      : null;
    clear(this.detail, h("header", {}, h("h2", {}, `Job #${id}`), state, cancel), h("p", {}, h("code", {}, job.command)), out);
    this.unfollow = this.socket.followJob(id, job.kept_from ?? 0,
      (piece) => appendPiece(out, piece.stream, piece.data),
      (end) => {
        state.dataset.state = end.state;
        state.textContent = `${end.state}${end.exit_code !== null ? ` (exit ${end.exit_code})` : ""}${end.error ? `: ${end.error}` : ""}`;
        cancel?.remove();
        void this.load();
      });
  }
}

/** The DNS label of port `port` of agent `agent` (stead_agent::front::label). */
function portLabel(agent: string, port: number): string {
  let label = `${port}-`;
  for (const ch of agent) {
    if (/[a-z0-9]/.test(ch)) label += ch;
    else if (/[A-Z]/.test(ch)) label += `-${ch.toLowerCase()}`;
    else label += { "-": "-0", ".": "-1", _: "-2" }[ch] ?? "";
  }
  return label;
}

/** Where a port is served: its own origin, under the inspector's host. */
export function portOrigin(agent: string, port: number): string {
  const portSuffix = location.port ? `:${location.port}` : "";
  const host = location.hostname === "127.0.0.1" ? "localhost" : location.hostname;
  return `${location.protocol}//${portLabel(agent, port)}.${host}${portSuffix}/`;
}

export class ProcessesView {
  readonly el: HTMLElement;
  private list = h("div", { class: "processes" });
  private shares = h("tbody");
  private status = h("p", { class: "status", role: "status" });

  constructor(private readonly agent: string, private readonly session: Session, private readonly socket: AgentSocket) {
    this.el = h("div", { class: "panel" }, this.status, h("button", { onclick: () => void this.load() }, "Refresh"),
      h("h2", {}, "Processes"), this.list,
      h("h2", {}, "Share links"),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "port"), h("th", {}, "link"), h("th", {}, "expires"), h("th", {}, ""))), this.shares));
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const processes: any[] = (await json(agentPath(this.agent, "/processes"))).processes;
      clear(this.list, processes.length ? processes.map((p) => this.process(p)) : h("p", { class: "hint" }, "No processes: start one with POST /processes."));
      if (can(this.session, "ports")) {
        const shares: any[] = (await json(agentPath(this.agent, "/shares"))).shares;
        clear(this.shares, shares.map((share) => h("tr", { "data-share": share.id },
          h("td", {}, String(share.port)),
          h("td", {}, share.revoked_ms ? `revoked ${when(share.revoked_ms)}` : "active (its URL is shown once, when made)"),
          h("td", {}, when(share.expires_at * 1000)),
          h("td", {}, share.revoked_ms ? null : h("button", { class: "revoke", onclick: () => void this.revoke(share.id) }, "Revoke")))));
      }
    } catch (error) {
      failed(this.status, error);
    }
  }

  private process(p: any): HTMLElement {
    const out = output();
    const ports: number[] = p.ports ?? [];
    // A port is served on its own origin, where the browser has no
    // credential: it is opened with a share link.
    const portLinks = ports.map((port) => h("span", { class: "port", "data-port": String(port), title: portOrigin(this.agent, port) },
      `port ${port} `,
      can(this.session, "ports") ? h("button", { class: "share", onclick: () => void this.share(port) }, "Share link") : null));
    const stop = can(this.session, "exec:computer") && p.state === "running"
      ? h("button", { class: "stop", onclick: async () => {
          try { await json(agentPath(this.agent, `/processes/${encodeURIComponent(p.id)}`), "DELETE"); await this.load(); } catch (error) { failed(this.status, error); }
        } }, "Stop")
      : null;
    const show = h("button", { onclick: () => {
      out.replaceChildren();
      if (p.job) this.socket.followJob(p.job, 0, (piece) => appendPiece(out, piece.stream, piece.data), () => {});
    } }, "Output");
    return h("article", { class: "process", "data-process": p.id },
      h("header", {}, h("strong", {}, p.id), " ", h("code", {}, p.command), ` · ${p.state}`, " ", ...portLinks, show, stop), out);
  }

  private async share(port: number): Promise<void> {
    try {
      const made = await json(agentPath(this.agent, `/ports/${port}/share`), "POST", { ttl_seconds: 3600 });
      const url: string = made.share.url;
      const copy = h("button", { class: "copy", onclick: () => void navigator.clipboard?.writeText(url) }, "Copy");
      this.status.className = "status ok";
      clear(this.status, `Share link to port ${port} (until ${when(made.share.expires_at * 1000)}): `,
        h("a", { class: "share-url", href: url, target: "_blank", rel: "noopener noreferrer" }, "open"), " ", copy);
      await this.load();
    } catch (error) {
      failed(this.status, error);
    }
  }

  private async revoke(id: string): Promise<void> {
    try {
      await json(agentPath(this.agent, `/shares/${encodeURIComponent(id)}`), "DELETE");
      await this.load();
    } catch (error) {
      failed(this.status, error);
    }
  }
}

export class SchedulesView {
  readonly el: HTMLElement;
  private body = h("div");
  private runs = h("section", { class: "runs" });
  private status = h("p", { class: "status", role: "status" });

  constructor(private readonly agent: string) {
    this.el = h("div", { class: "columns panel" },
      h("div", {}, this.status, h("button", { onclick: () => void this.load() }, "Refresh"), this.body),
      this.runs);
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const schedules: any[] = (await json(agentPath(this.agent, "/schedules"))).schedules;
      const hooks: any[] = (await json(agentPath(this.agent, "/hooks"))).hooks;
      const what = (exec: any, url?: string) => (exec ? h("code", {}, exec.command ?? "") : h("span", {}, `webhook ${url ?? ""}`));
      clear(this.body,
        h("h2", {}, "Schedules"),
        schedules.length ? h("table", {}, h("tbody", {}, schedules.map((s) => h("tr", { "data-schedule": s.id },
          h("td", {}, h("button", { class: "open-schedule", onclick: () => void this.scheduleRuns(s.id) }, s.id)),
          h("td", {}, s.cron ? `${s.cron} (${s.tz})` : s.kind),
          h("td", {}, what(s.exec, s.url)),
          h("td", { class: "state" }, s.state),
          h("td", {}, s.next_due_ms ? `next ${when(s.next_due_ms)}` : ""))))) : h("p", { class: "hint" }, "No schedules."),
        h("h2", {}, "Hooks"),
        hooks.length ? h("table", {}, h("tbody", {}, hooks.map((hook) => h("tr", { "data-hook": hook.name },
          h("td", {}, h("button", { class: "open-hook", onclick: () => void this.hookRuns(hook.name) }, hook.name)),
          h("td", {}, what(hook.exec)),
          h("td", {}, `${hook.calls} call${hook.calls === 1 ? "" : "s"}${hook.last_call_ms ? `, last ${when(hook.last_call_ms)}` : ""}`))))) : h("p", { class: "hint" }, "No hooks."));
    } catch (error) {
      failed(this.status, error);
    }
  }

  /** A schedule's runs (its last 50, as the route keeps them). */
  private async scheduleRuns(id: string): Promise<void> {
    const answer = await json(agentPath(this.agent, `/schedules/${encodeURIComponent(id)}`));
    const runs: any[] = answer.runs ?? [];
    clear(this.runs, h("h2", {}, `Runs of ${id}`),
      runs.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "due"), h("th", {}, "attempt"), h("th", {}, "state"), h("th", {}, "job"), h("th", {}, "error"))),
        h("tbody", {}, runs.map((run) => h("tr", { "data-run": String(run.due_ms) },
          h("td", {}, when(run.due_ms)), h("td", {}, String(run.attempt)), h("td", { class: "state" }, run.state),
          h("td", {}, run.job_id ? `#${run.job_id}` : run.status ? `HTTP ${run.status}` : ""), h("td", {}, run.error ?? ""))))) : h("p", { class: "hint" }, "No runs yet."));
  }

  /** A hook's runs: the jobs its calls queued. */
  private async hookRuns(name: string): Promise<void> {
    const jobs: any[] = (await json(agentPath(this.agent, "/jobs?limit=100"))).jobs;
    const runs = jobs.filter((job) => job.source === `hook:${name}`);
    clear(this.runs, h("h2", {}, `Calls of ${name}`),
      runs.length ? h("table", {}, h("tbody", {}, runs.map((job) => h("tr", { "data-job": String(job.id) },
        h("td", {}, `#${job.id}`), h("td", {}, when(job.created_ms)), h("td", { class: "state" }, job.state))))) : h("p", { class: "hint" }, "No calls among the newest jobs."));
  }
}
