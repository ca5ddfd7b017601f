// The timeline: checkpoints (manual and automatic) and audit entries on one
// line, newest first. Pick any two points (or one and "now") to see what
// differs, per file; restore one file or everything from a checkpoint;
// undo the last change. Every action is the API's own route.

import { ApiError, Session, agentPath, can, json } from "./api";
import { clear, h, when } from "./dom";
import { code } from "./files";
import { AgentSocket } from "./socket";

interface Checkpoint {
  id: number;
  kind: "manual" | "automatic";
  name?: string;
  note?: string;
  actor: string;
  operation?: string;
  whole: boolean;
  roots: string[];
  revision: number;
  created_ms: number;
  /** The commit each git repository it pinned was at. */
  git?: RepoHead[];
}

interface RepoHead {
  repo: string;
  branch: string | null;
  commit: string | null;
}

/** `/app main@1a2b3c4` for each repository, as a checkpoint's line ends. */
function heads(git: RepoHead[] | undefined): string {
  return (git ?? [])
    .map((r) => ` · git ${r.repo} ${r.branch ?? "detached"}@${r.commit ? r.commit.slice(0, 7) : "(no commits)"}`)
    .join("");
}

interface AuditEntry {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string | null;
  outcome: string;
  revision: number | null;
}

/** A point a diff can start or end at, as the diff route names it. */
interface Point {
  point: string;
  label: string;
  checkpoint: number | null;
}

export class TimelineView {
  readonly el: HTMLElement;
  private list = h("ol", { class: "timeline" });
  private diff = h("section", { class: "diff" }, h("p", { class: "hint" }, "Pick two points on the timeline (or one, to compare it with now)."));
  private status = h("p", { class: "status", role: "status" });
  private picked: Point[] = [];

  constructor(private readonly agent: string, private readonly session: Session, socket: AgentSocket) {
    const name = h("input", { placeholder: "checkpoint name (optional)", "aria-label": "checkpoint name" });
    const writer = can(session, "write");
    const actions = h("div", { class: "actions" },
      writer ? name : null,
      writer ? h("button", { class: "checkpoint", onclick: () => void this.checkpoint(name) }, "Create checkpoint") : null,
      writer ? h("button", { class: "undo", onclick: () => void this.undo() }, "Undo last change") : null,
      h("button", { onclick: () => void this.load() }, "Refresh"));
    this.el = h("div", { class: "columns panel" },
      h("div", {}, actions, this.status, this.list),
      this.diff);
    let pending = 0;
    socket.onChange(() => {
      window.clearTimeout(pending);
      pending = window.setTimeout(() => void this.load(), 500);
    });
    void this.load();
  }

  private async load(): Promise<void> {
    const checkpoints: Checkpoint[] = (await json(agentPath(this.agent, "/checkpoints?limit=100"))).checkpoints;
    let audit: AuditEntry[] = [];
    if (can(this.session, "admin")) {
      // The newest entries (the log answers newest first).
      const entries: AuditEntry[] = (await json(agentPath(this.agent, "/audit?limit=300"))).entries;
      audit = entries.filter((e) => e.revision !== null && e.outcome === "ok");
    }
    const items: [number, HTMLElement][] = [];
    const now = this.item({ point: "now", label: "now", checkpoint: null }, h("strong", {}, "now"), "now");
    items.push([Number.MAX_SAFE_INTEGER, now]);
    for (const c of checkpoints) {
      const title = c.kind === "manual" ? `checkpoint ${c.name ?? `#${c.id}`}` : `automatic checkpoint before ${c.operation ?? "a change"}`;
      const label = c.name ?? String(c.id);
      items.push([c.created_ms, this.item({ point: String(c.id), label, checkpoint: c.id },
        h("span", {}, h("strong", {}, title), ` · revision ${c.revision} · ${c.whole ? "whole workspace" : c.roots.join(", ")} · ${c.actor} · ${when(c.created_ms)}`, c.note ? ` · ${c.note}` : "", heads(c.git)),
        "checkpoint", `checkpoint-${c.id}`)]);
    }
    for (const e of audit) {
      items.push([e.at, this.item({ point: `rev:${e.revision}`, label: `revision ${e.revision}`, checkpoint: null },
        h("span", {}, `${e.action} ${e.target ?? ""} · revision ${e.revision} · ${e.actor} · ${when(e.at)}`), "audit", `audit-${e.id}`)]);
    }
    items.sort((a, b) => b[0] - a[0]);
    clear(this.list, items.map(([, el]) => el));
  }

  private item(point: Point, body: HTMLElement, kind: string, key = ""): HTMLElement {
    const box = h("input", { type: "checkbox", "aria-label": `pick ${point.label}` });
    box.checked = this.picked.some((p) => p.point === point.point);
    const li = h("li", { class: kind, "data-point": point.point, "data-key": key }, h("label", {}, box, " ", body));
    if (box.checked) li.classList.add("picked");
    box.addEventListener("change", () => {
      this.picked = this.picked.filter((p) => p.point !== point.point);
      if (box.checked) this.picked.push(point);
      while (this.picked.length > 2) {
        const dropped = this.picked.shift()!;
        const other = this.list.querySelector<HTMLInputElement>(`li[data-point="${CSS.escape(dropped.point)}"] input`);
        if (other) other.checked = false;
      }
      for (const el of this.list.querySelectorAll("li")) {
        el.classList.toggle("picked", this.picked.some((p) => p.point === (el as HTMLElement).dataset.point));
      }
      if (this.picked.length) void this.showDiff();
    });
    return li;
  }

  /** The picked points, older first ("now" is the newest of all). */
  private ends(): [Point, Point] {
    const nowPoint = { point: "now", label: "now", checkpoint: null };
    const [a, b] = this.picked.length === 1 ? [this.picked[0], nowPoint] : this.picked;
    const order = (p: Point) => {
      const li = this.list.querySelector(`li[data-point="${CSS.escape(p.point)}"]`);
      return li ? [...this.list.children].indexOf(li) : -1;
    };
    return order(a) > order(b) ? [a, b] : [b, a];
  }

  private async showDiff(): Promise<void> {
    const [from, to] = this.ends();
    clear(this.diff, h("p", { class: "hint" }, `Comparing ${from.label} with ${to.label}…`));
    let entries: any[] = [];
    try {
      let after: string | undefined;
      do {
        const page: any = await json(agentPath(this.agent, "/diff"), "POST", { from: from.point, to: to.point, text: true, after });
        entries = entries.concat(page.entries);
        after = page.next_after ?? undefined;
      } while (after);
    } catch (error) {
      clear(this.diff, h("p", { class: "error" }, `No diff: ${(error as Error).message}`));
      return;
    }
    const restorable = from.checkpoint !== null && to.point === "now" && can(this.session, "write");
    const header = h("header", {}, h("h2", {}, `${from.label} → ${to.label}: ${entries.length} path${entries.length === 1 ? "" : "s"}`),
      restorable ? h("button", { class: "restore-all", onclick: () => void this.restore(from, null) }, `Restore everything to ${from.label}`) : null);
    const files = entries.map((entry) => {
      const text = entry.text;
      const body = text?.kind === "unified" ? code(`${entry.path}.diff`, text.patch)
        : text?.kind === "binary" ? h("p", { class: "hint" }, "Binary files differ.")
        : text?.kind === "too_large" ? h("p", { class: "hint" }, `Too large to compare here (over ${text.limit} bytes).`)
        : h("p", { class: "hint" }, entry.from ? `moved from ${entry.from}` : entry.change);
      return h("article", { class: "diff-file", "data-path": entry.path },
        h("header", {}, h("strong", {}, entry.path), h("span", { class: "meta" }, entry.change),
          restorable ? h("button", { class: "restore-file", onclick: () => void this.restore(from, entry.path) }, "Restore this file") : null),
        body);
    });
    clear(this.diff, header, files.length ? files : h("p", { class: "hint" }, "No differences."));
  }

  private async restore(from: Point, path: string | null): Promise<void> {
    const what = path ?? "everything";
    if (!confirm(`Restore ${what} to ${from.label}? (An automatic checkpoint is taken first: Undo takes it back.)`)) return;
    await this.act(`Restored ${what} to ${from.label}.`, () =>
      json(agentPath(this.agent, "/restore"), "POST", path ? { checkpoint: from.point, paths: [path] } : { checkpoint: from.point }));
  }

  private async checkpoint(name: HTMLInputElement): Promise<void> {
    const body = name.value.trim() ? { name: name.value.trim() } : {};
    await this.act("Checkpoint created.", async () => {
      const made = await json(agentPath(this.agent, "/checkpoints"), "POST", body);
      name.value = "";
      return made;
    });
  }

  private async undo(): Promise<void> {
    await this.act("Undone.", () => json(agentPath(this.agent, "/undo"), "POST", {}));
  }

  private async act(done: string, action: () => Promise<unknown>): Promise<void> {
    this.status.className = "status";
    this.status.textContent = "Working…";
    try {
      await action();
      this.status.className = "status ok";
      this.status.textContent = done;
      await this.load();
      if (this.picked.length) await this.showDiff();
    } catch (error) {
      this.status.className = "status error";
      this.status.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
    }
  }
}
