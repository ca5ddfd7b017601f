// The API as the page calls it: the same routes, scopes and audit as any
// client, authenticated by the session cookie (sent by the browser, never
// seen by this script).

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Session {
  kind: "admin" | "token";
  agent: string | null;
  scopes: string[] | null;
  expires_at: number;
}

/** Called when a request finds the session gone (expired, revoked). */
let onSignedOut: (error: ApiError) => Promise<void> = async () => {};

export function whenSignedOut(handler: (error: ApiError) => Promise<void>): void {
  onSignedOut = handler;
}

const SIGNED_OUT = new Set(["SESSION_EXPIRED", "SESSION_INVALID", "UNAUTHORIZED", "TOKEN_EXPIRED", "TOKEN_REVOKED"]);

async function failure(response: Response): Promise<ApiError> {
  let body: { error?: { code?: string; message?: string } } = {};
  try {
    body = await response.json();
  } catch {
    // Not JSON: the status says enough.
  }
  const error = body.error ?? {};
  return new ApiError(
    response.status,
    error.code ?? `HTTP_${response.status}`,
    error.message ?? response.statusText,
    (error as Record<string, unknown>) ?? {},
  );
}

/** A request; on a lost session, waits for the user to sign in again and
 * repeats it once, so nothing they were doing is dropped. */
export async function request(path: string, init: RequestInit = {}, retried = false): Promise<Response> {
  const response = await fetch(path, { credentials: "same-origin", ...init });
  if (response.ok) return response;
  const error = await failure(response);
  if (response.status === 401 && SIGNED_OUT.has(error.code) && !retried && !path.startsWith("/ui/session")) {
    await onSignedOut(error);
    return request(path, init, true);
  }
  throw error;
}

export async function json<T = any>(path: string, method = "GET", body?: unknown): Promise<T> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "content-type": "application/json" };
  }
  const response = await request(path, init);
  return response.json();
}

export function agentPath(agent: string, rest = ""): string {
  return `/agents/${encodeURIComponent(agent)}${rest}`;
}

export function filePath(agent: string, path: string): string {
  return agentPath(agent, "/files" + path.split("/").map(encodeURIComponent).join("/"));
}

export function tool<T = any>(agent: string, name: string, args: unknown): Promise<T> {
  return json<T>(agentPath(agent, `/${name}`), "POST", args);
}

export async function session(): Promise<Session | null> {
  const response = await fetch("/ui/session", { credentials: "same-origin" });
  if (response.status === 401) return null;
  if (!response.ok) throw await failure(response);
  return (await response.json()).session;
}

export async function signIn(token: string): Promise<Session> {
  const response = await fetch("/ui/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  if (!response.ok) throw await failure(response);
  return (await response.json()).session;
}

export async function signOut(): Promise<void> {
  await fetch("/ui/session", { method: "DELETE", credentials: "same-origin" });
}

export function can(session: Session, scope: string): boolean {
  return session.kind === "admin" || (session.scopes ?? []).includes(scope);
}
