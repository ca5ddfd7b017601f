// The file tab: a lazy tree (a directory is listed when opened) kept live
// by the change feed, and a viewer that shows text with line numbers and
// highlighting, images, and binary or large files as a download; text can
// be edited and saved with a revision check (`write` with `if_rev`), so a
// change made meanwhile is shown instead of overwritten.

import { ApiError, Session, can, filePath, request, tool } from "./api";
import { bytes, clear, h, when } from "./dom";
import { highlight } from "./highlight";
import { AgentSocket, Change } from "./socket";

/** Larger files are offered as a download instead of shown. */
const MAX_SHOWN = 2 * 1024 * 1024;
const IMAGE_TYPES: Record<string, string> = {
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp",
  svg: "image/svg+xml", ico: "image/x-icon", bmp: "image/bmp", avif: "image/avif",
};

interface Entry {
  name: string;
  type: "file" | "dir" | "symlink";
  size: number;
  mtime: number;
  rev: number;
  mode: string;
  target?: string;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut <= 0 ? "/" : path.slice(0, cut);
}

function join(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

export class FilesView {
  readonly el: HTMLElement;
  private tree: HTMLElement;
  private viewer: HTMLElement;
  /** Directories listed so far, by path: their child lists. */
  private listed = new Map<string, HTMLUListElement>();
  private refreshing = new Map<string, number>();
  private open: { path: string; rev: number } | null = null;
  private editor: Editor | null = null;
  /** What each listed path is, for its details on hover. */
  private entries = new Map<string, Entry>();

  constructor(private readonly agent: string, private readonly session: Session, socket: AgentSocket) {
    this.tree = h("nav", { class: "tree", "aria-label": "files" });
    this.tree.addEventListener("click", (event) => this.click(event));
    this.tree.addEventListener("mouseover", (event) => this.hover(event));
    this.viewer = h("section", { class: "viewer" }, h("p", { class: "hint" }, "Pick a file."));
    this.el = h("div", { class: "files" }, this.tree, this.viewer);
    socket.onChange((change) => this.changed(change));
    // Opened (again): what changed before the feed started, or while it
    // was down beyond what it replays, is in a fresh listing.
    let opens = 0;
    socket.onState((state) => {
      if (state === "open" && opens++ > 0) for (const dir of this.listed.keys()) this.refresh(dir);
    });
    const root = h("ul", { class: "dir", "data-dir": "/" });
    this.tree.append(root);
    this.listed.set("/", root);
    void this.list("/", root);
  }

  /** Lists `dir` into `ul`, every page of it. */
  private async list(dir: string, ul: HTMLUListElement): Promise<void> {
    const items: HTMLElement[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await tool(this.agent, "ls", { path: dir, limit: 10000, cursor });
        for (const entry of page.entries as Entry[]) items.push(this.item(dir, entry));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
    } catch (error) {
      clear(ul, h("li", { class: "error" }, (error as Error).message));
      return;
    }
    // Keep what is open open.
    const expanded = new Set(
      [...ul.querySelectorAll<HTMLElement>(":scope > li.open")].map((li) => li.dataset.path ?? ""),
    );
    for (const path of expanded) this.forget(path);
    clear(ul, items.length ? items : h("li", { class: "empty" }, "(empty)"));
    for (const li of items) {
      if (expanded.has(li.dataset.path ?? "")) li.querySelector<HTMLElement>(":scope > .entry")?.click();
    }
    ul.dataset.loaded = "true";
    // For the benchmark: when the first listing is on the page and drawn.
    if (dir === "/" && !performance.getEntriesByName("stead:tree").length) {
      requestAnimationFrame(() => performance.mark("stead:tree"));
    }
  }

  /** One entry of a listing. Built plainly (a listing may hold tens of
   * thousands); clicks are handled once, on the tree ([`FilesView.click`]),
   * and details are shown on hover. */
  private item(dir: string, entry: Entry): HTMLElement {
    const path = join(dir, entry.name);
    const label = document.createElement("button");
    label.className = `entry ${entry.type}`;
    label.dataset.path = path;
    label.dataset.type = entry.type;
    label.textContent = entry.name + (entry.type === "dir" ? "/" : entry.type === "symlink" ? ` → ${entry.target ?? ""}` : "");
    this.entries.set(path, entry);
    const li = document.createElement("li");
    li.dataset.path = path;
    li.append(label);
    return li;
  }

  private click(event: Event): void {
    const label = (event.target as HTMLElement).closest<HTMLElement>(".entry");
    const path = label?.dataset.path;
    if (!label || !path) return;
    if (label.dataset.type !== "dir") return void this.show(path);
    const li = label.parentElement!;
    const existing = this.listed.get(path);
    if (existing) {
      existing.remove();
      this.forget(path);
      li.classList.remove("open");
      return;
    }
    const ul = h("ul", { class: "dir", "data-dir": path });
    li.append(ul);
    li.classList.add("open");
    this.listed.set(path, ul);
    void this.list(path, ul);
  }

  private hover(event: Event): void {
    const label = (event.target as HTMLElement).closest<HTMLElement>(".entry");
    const entry = label && this.entries.get(label.dataset.path ?? "");
    if (label && entry && !label.title) label.title = `${entry.mode} · ${bytes(entry.size)} · ${when(entry.mtime)}`;
  }

  private forget(dir: string): void {
    for (const path of [...this.listed.keys()]) {
      if (path === dir || path.startsWith(dir + "/")) this.listed.delete(path);
    }
  }

  private changed(change: Change): void {
    const dir = parentOf(change.path);
    if (this.listed.has(dir)) this.refresh(dir);
    if (change.kind === "deleted") this.forget(change.path);
    if (this.open && this.open.path === change.path && change.revision > this.open.rev) {
      this.editor ? this.editor.changedMeanwhile(change) : void this.show(change.path);
    }
  }

  /** Lists `dir` again soon (one listing for a burst of changes). */
  private refresh(dir: string): void {
    if (this.refreshing.has(dir)) return;
    this.refreshing.set(
      dir,
      window.setTimeout(() => {
        this.refreshing.delete(dir);
        const ul = this.listed.get(dir);
        if (ul) void this.list(dir, ul);
      }, 100),
    );
  }

  async show(path: string): Promise<void> {
    this.editor = null;
    clear(this.viewer, h("p", { class: "hint" }, `Loading ${path}…`));
    const abort = new AbortController();
    let response: Response;
    try {
      // Never from the browser's cache: the file may have changed since.
      response = await request(filePath(this.agent, path), { signal: abort.signal, cache: "no-store" });
    } catch (error) {
      const message = error instanceof ApiError && error.status === 404 ? `${path} is gone.` : (error as Error).message;
      clear(this.viewer, h("p", { class: "error" }, message));
      this.open = null;
      return;
    }
    const size = Number(response.headers.get("x-file-size") ?? "0");
    const rev = Number(response.headers.get("x-revision") ?? "0");
    this.open = { path, rev };
    const download = h("a", { class: "download", href: filePath(this.agent, path), download: path.split("/").pop() ?? "file" }, "Download");
    const header = h("header", {}, h("h2", { class: "path" }, path), h("span", { class: "meta" }, `${bytes(size)} · revision ${rev}`), download);
    if (size > MAX_SHOWN) {
      abort.abort();
      clear(this.viewer, header, h("p", { class: "hint", "data-kind": "too-large" }, `This file is ${bytes(size)}, too large to show here (over ${bytes(MAX_SHOWN)}): download it.`));
      return;
    }
    const data = new Uint8Array(await response.arrayBuffer());
    const extension = path.split(".").pop()?.toLowerCase() ?? "";
    const image = IMAGE_TYPES[extension];
    if (image) {
      const url = URL.createObjectURL(new Blob([data], { type: image }));
      clear(this.viewer, header, h("img", { class: "image", src: url, alt: path }));
      return;
    }
    if (data.includes(0)) {
      clear(this.viewer, header, h("p", { class: "hint", "data-kind": "binary" }, `A binary file of ${bytes(size)}: download it to open it.`));
      return;
    }
    const text = new TextDecoder().decode(data);
    const editButton = can(this.session, "write")
      ? h("button", { class: "edit", onclick: () => this.edit(path, rev, text, header) }, "Edit")
      : null;
    if (editButton) header.append(editButton);
    clear(this.viewer, header, code(path, text));
  }

  private edit(path: string, rev: number, text: string, header: HTMLElement): void {
    this.editor = new Editor(this.agent, path, rev, text, (saved, size) => {
      if (this.open) this.open.rev = saved;
      const meta = header.querySelector(".meta");
      if (meta) meta.textContent = `${bytes(size)} · revision ${saved}`;
    });
    header.querySelector(".edit")?.remove();
    clear(this.viewer, header, this.editor.el);
    this.editor.focus();
  }
}

/** Text with line numbers, highlighted when its kind is known. */
export function code(path: string, text: string): HTMLElement {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const gutter = h("pre", { class: "gutter", "aria-hidden": "true" }, lines.map((_, i) => `${i + 1}\n`).join(""));
  const body = h("code", { class: "hljs" });
  const html = highlight(path, text);
  if (html === null) body.textContent = text;
  else body.innerHTML = html; // highlight.js output: the text escaped, in spans.
  return h("div", { class: "code" }, gutter, h("pre", { class: "text" }, body));
}

/** Editing one file: the text the user typed is never lost; a save checks
 * the revision it started from. */
class Editor {
  readonly el: HTMLElement;
  private area: HTMLTextAreaElement;
  private status: HTMLElement;
  private theirs: HTMLElement;

  constructor(
    private readonly agent: string,
    private readonly path: string,
    private rev: number,
    text: string,
    private readonly onSaved: (rev: number, size: number) => void,
  ) {
    this.area = h("textarea", { class: "editor", spellcheck: "false", "aria-label": `edit ${path}` });
    this.area.value = text;
    this.status = h("p", { class: "status", role: "status" });
    this.theirs = h("div", { class: "theirs" });
    const save = h("button", { class: "save", onclick: () => void this.save(false) }, "Save");
    this.area.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === "s") {
        event.preventDefault();
        void this.save(false);
      }
    });
    this.el = h("div", { class: "editing" }, h("div", { class: "actions" }, save), this.status, this.area, this.theirs);
  }

  focus(): void {
    this.area.focus();
  }

  changedMeanwhile(change: Change): void {
    // A refused save already says so, with their version.
    if (this.status.classList.contains("conflict")) return;
    this.status.className = "status warning";
    this.status.textContent = `${this.path} was ${change.kind} at revision ${change.revision} while you edit; saving will ask first.`;
  }

  private async save(overwrite: boolean): Promise<void> {
    this.status.className = "status";
    this.status.textContent = "Saving…";
    try {
      const written = await tool(this.agent, "write", { path: this.path, content: this.area.value, if_rev: this.rev });
      this.rev = written.revision;
      this.onSaved(this.rev, new TextEncoder().encode(this.area.value).length);
      clear(this.theirs);
      this.status.className = "status ok";
      this.status.textContent = `Saved at revision ${this.rev}${overwrite ? " (their version replaced)" : ""}.`;
    } catch (error) {
      if (error instanceof ApiError && error.code === "REVISION_CHANGED") {
        await this.conflict(Number(error.body.revision ?? 0));
        return;
      }
      this.status.className = "status error";
      this.status.textContent = `Not saved: ${(error as Error).message}`;
    }
  }

  /** The file changed since the editor opened it: show their version
   * beside the user's, and let the user choose. */
  private async conflict(current: number): Promise<void> {
    this.status.className = "status conflict";
    this.status.textContent = `Not saved: ${this.path} changed since you opened it (now revision ${current}). Their version is below; your text is kept.`;
    let theirs = "";
    if (current > 0) {
      const response = await request(filePath(this.agent, this.path), { cache: "no-store" });
      theirs = await response.text();
      current = Number(response.headers.get("x-revision") ?? current);
    }
    const keepMine = h("button", {
      class: "overwrite",
      onclick: () => {
        this.rev = current;
        void this.save(true);
      },
    }, "Save mine over theirs");
    const takeTheirs = h("button", {
      class: "take-theirs",
      onclick: () => {
        this.area.value = theirs;
        this.rev = current;
        clear(this.theirs);
        this.status.className = "status";
        this.status.textContent = "Their version loaded.";
      },
    }, "Take theirs");
    clear(this.theirs, h("h3", {}, current > 0 ? `Their version (revision ${current})` : "The file was deleted"), code(this.path, theirs), h("div", { class: "actions" }, keepMine, takeTheirs));
  }
}
