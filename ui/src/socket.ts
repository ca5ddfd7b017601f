// The agent's WebSocket, kept open: after a lost connection it reconnects
// and subscribes again from the last revision and offsets it saw, so the
// page catches up with nothing lost or doubled (the protocol's own rule:
// changes from the last revision minus one, skipping paths already seen at
// it; job output from the offset after the last piece).

import { agentPath } from "./api";

export interface Change {
  type: "change";
  revision: number;
  path: string;
  kind: "created" | "modified" | "deleted";
}

export interface Output {
  type: "output";
  job: number;
  offset: number;
  stream: "stdout" | "stderr";
  data: string;
}

export interface JobEnd {
  type: "job_end";
  job: number;
  state: string;
  exit_code: number | null;
  error: string | null;
}

type Listener = (message: any) => void;

interface JobFollow {
  from: number;
  onOutput: (piece: Output) => void;
  onEnd: (end: JobEnd) => void;
}

export class AgentSocket {
  private ws: WebSocket | null = null;
  private closed = false;
  private retry = 0;
  private revision: number | null = null;
  private seenAtRevision = new Set<string>();
  private jobs = new Map<number, JobFollow>();
  private changeListeners = new Set<(change: Change) => void>();
  private stateListeners = new Set<(state: "open" | "lost") => void>();

  /** Opens once `since` (the revision the page's first reads start from)
   * is known. */
  constructor(private readonly agent: string, since: Promise<number | null>) {
    void since.then((revision) => {
      this.revision = revision;
      if (!this.closed) this.connect();
    });
  }

  onChange(listener: (change: Change) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  onState(listener: (state: "open" | "lost") => void): void {
    this.stateListeners.add(listener);
  }

  /** Follows job `job` from byte `from`; resumes after a reconnect. */
  followJob(job: number, from: number, onOutput: (piece: Output) => void, onEnd: (end: JobEnd) => void): () => void {
    const follow = { from, onOutput, onEnd };
    this.jobs.set(job, follow);
    this.send({ type: "subscribe_job", job, from });
    return () => {
      this.jobs.delete(job);
      this.send({ type: "unsubscribe_job", job });
    };
  }

  close(): void {
    this.closed = true;
    this.ws?.close();
  }

  private send(message: unknown): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private connect(): void {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${agentPath(this.agent, "/ws")}`);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 0;
      const since = this.revision === null ? undefined : Math.max(0, this.revision - 1);
      this.send({ type: "subscribe_changes", since });
      for (const [job, follow] of this.jobs) this.send({ type: "subscribe_job", job, from: follow.from });
      for (const listener of this.stateListeners) listener("open");
    };
    ws.onmessage = (event) => this.receive(JSON.parse(event.data));
    ws.onclose = () => {
      if (this.closed) return;
      for (const listener of this.stateListeners) listener("lost");
      const delay = Math.min(10_000, 250 * 2 ** this.retry++);
      setTimeout(() => this.connect(), delay);
    };
  }

  private receive(message: any): void {
    switch (message.type) {
      case "change": {
        const change = message as Change;
        if (this.revision !== null && change.revision < this.revision) return;
        if (change.revision === this.revision) {
          if (this.seenAtRevision.has(change.path)) return;
        } else {
          this.revision = change.revision;
          this.seenAtRevision.clear();
        }
        this.seenAtRevision.add(change.path);
        for (const listener of this.changeListeners) listener(change);
        break;
      }
      case "output": {
        const piece = message as Output;
        const follow = this.jobs.get(piece.job);
        if (!follow || piece.offset < follow.from) return;
        follow.from = piece.offset + new TextEncoder().encode(piece.data).length;
        follow.onOutput(piece);
        break;
      }
      case "job_end": {
        const follow = this.jobs.get(message.job);
        if (!follow) return;
        this.jobs.delete(message.job);
        follow.onEnd(message as JobEnd);
        break;
      }
      default:
        break;
    }
  }
}
