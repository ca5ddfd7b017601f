// Drives the inspector in the system's Chromium (Debian's package, never a
// browser a test library downloads) with playwright-core, against the real
// Worker the cargo test started (tests/inspector.rs). One scenario per run:
//   node tests/inspector/browser.mjs <scenario>
// Environment: STEAD_UI_BASE (the inspector's origin, http://localhost:PORT),
// STEAD_UI_AGENT, STEAD_UI_ADMIN, STEAD_UI_TOKEN (a second token, per
// scenario), STEAD_UI_ARTIFACTS (screenshots), CHROMIUM (the browser).
// It prints one JSON line of findings on success; any failed check throws
// and exits non-zero with the reason.

import { chromium } from "playwright-core";

const base = process.env.STEAD_UI_BASE;
const agent = process.env.STEAD_UI_AGENT;
const admin = process.env.STEAD_UI_ADMIN;
const token = process.env.STEAD_UI_TOKEN;
const artifacts = process.env.STEAD_UI_ARTIFACTS;
const scenario = process.argv[2];

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** The API, as any client calls it (the admin token, not the page's session). */
async function api(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const tool = (name, args) => api("POST", `/agents/${agent}/${name}`, args);

async function signIn(page, with_token) {
  await page.goto(`${base}/ui/#/agents/${agent}`);
  await page.getByLabel("token").fill(with_token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".tabs").waitFor();
}

const entry = (page, path) => page.locator(`.tree .entry[data-path="${path}"]`);

const scenarios = {
  /** Sign-in: a wrong token is refused with a message, the right one opens
   * a session kept in a cookie no script reads, sign-out ends it. */
  async sign_in(page, context) {
    await page.goto(`${base}/ui/`);
    await page.getByLabel("token").fill("stk_not.valid");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
    await page.getByLabel("token").fill(admin);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator(`a[data-agent="${agent}"]`).waitFor();
    await page.screenshot({ path: `${artifacts}/agents.png` });
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "__Host-stead_session");
    check(session, "a session cookie is set");
    check(session.httpOnly && session.secure && session.sameSite === "Strict", `cookie attributes: ${JSON.stringify(session)}`);
    check(!session.value.includes(admin), "the cookie is not the token");
    const visible = await page.evaluate(() => document.cookie);
    check(!visible.includes("stead_session"), "scripts cannot read the session");
    // The page's CSP forbids inline script.
    const csp = (await page.request.get(`${base}/ui/`)).headers()["content-security-policy"];
    const scripts = (csp ?? "").split(";").map((d) => d.trim()).find((d) => d.startsWith("script-src"));
    check(scripts === "script-src 'self'", `no inline script, no eval: ${csp}`);
    await page.reload();
    await page.locator(`a[data-agent="${agent}"]`).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("token").waitFor();
    const after = await context.cookies();
    check(!after.some((c) => c.name === "__Host-stead_session"), "sign-out clears the cookie");
    return { cookie: { httpOnly: session.httpOnly, secure: session.secure, sameSite: session.sameSite } };
  },

  /** Open a directory and a file; edit and save; a change made meanwhile
   * is shown, not overwritten; a file written through the API appears in
   * the tree within 2 s. */
  async files(page) {
    await signIn(page, admin);
    await entry(page, "/src").click();
    await entry(page, "/src/main.rs").click();
    await page.locator(".viewer .code").waitFor();
    const shown = await page.locator(".viewer .code .text").innerText();
    check(shown.includes('println!("hello")'), `the file's text is shown: ${shown}`);
    const numbers = await page.locator(".viewer .code .gutter").innerText();
    check(numbers.trim().split("\n").length === 3, `three line numbers: ${numbers}`);
    check((await page.locator(".viewer .code .hljs-keyword").count()) > 0, "Rust is highlighted");
    await page.screenshot({ path: `${artifacts}/files.png` });

    // Edit and save.
    await page.getByRole("button", { name: "Edit" }).click();
    await page.locator("textarea.editor").fill('fn main() {\n    println!("edited in the browser");\n}\n');
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator(".status.ok").waitFor();
    const saved = await tool("read", { path: "/src/main.rs" });
    check(saved.content.includes("edited in the browser"), `saved through the page: ${saved.content}`);
    const status = await page.locator(".status.ok").innerText();
    const savedAt = status.match(/revision (\d+)/)?.[1];
    const meta = await page.locator(".viewer header .meta").innerText();
    check(savedAt !== undefined && meta.endsWith(`revision ${savedAt}`), `the header names the saved revision (${status}): ${meta}`);

    // Someone else writes while the user edits: the save is refused and
    // their version shown; the user's text stays.
    await page.locator("textarea.editor").fill("mine\n");
    await tool("write", { path: "/src/main.rs", content: "theirs\n" });
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator(".status.conflict").waitFor();
    check((await page.locator("textarea.editor").inputValue()) === "mine\n", "the user's text is kept");
    await page.locator(".theirs .code .text", { hasText: "theirs" }).waitFor().catch(async (error) => {
      await page.screenshot({ path: `${artifacts}/conflict-failed.png` });
      throw new Error(`their version not shown: ${await page.locator(".viewer").innerText()} (${error.message})`);
    });
    check((await tool("read", { path: "/src/main.rs" })).content === "theirs\n", "nothing was overwritten");
    await page.screenshot({ path: `${artifacts}/conflict.png` });
    await page.getByRole("button", { name: "Save mine over theirs" }).click();
    await page.locator(".status.ok").waitFor();
    check((await tool("read", { path: "/src/main.rs" })).content === "mine\n", "the user chose to overwrite");

    // Live tree: a file written through the API appears.
    const started = Date.now();
    await tool("write", { path: "/src/live.txt", content: "hello\n" });
    await entry(page, "/src/live.txt").waitFor({ timeout: 2000 });
    const appeared_ms = Date.now() - started;

    // An image is shown; a binary file is described with a download link.
    await entry(page, "/logo.png").click();
    await page.locator(".viewer img.image").waitFor();
    const width = await page.locator(".viewer img.image").evaluate((img) => img.naturalWidth);
    check(width === 1, `the PNG decoded: width ${width}`);
    await entry(page, "/blob.bin").click();
    await page.locator('.viewer [data-kind="binary"]').waitFor();
    check(await page.locator(".viewer a.download").count() === 1, "a download link");
    return { appeared_ms };
  },

  /** A read-only token gets a read-only page, and the API refuses a write
   * made with its session anyway. */
  async read_only(page) {
    await signIn(page, token);
    await page.locator('[data-read-only="true"]').waitFor();
    await entry(page, "/src").click();
    await entry(page, "/src/main.rs").click();
    await page.locator(".viewer .code").waitFor();
    check(await page.getByRole("button", { name: "Edit" }).count() === 0, "no Edit button");
    const status = await page.evaluate(async (agent) => {
      const response = await fetch(`/agents/${agent}/write`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ path: "/x", content: "x" }),
      });
      return [response.status, (await response.json()).error.code];
    }, agent);
    check(status[0] === 403 && status[1] === "FORBIDDEN", `a write is refused: ${status}`);
    return { write: status };
  },

  /** The session ends while the user edits (its token expires): saving
   * asks to sign in again over the page, then saves what was typed. */
  async expiry(page) {
    await signIn(page, token);
    await entry(page, "/README.md").click();
    await page.getByRole("button", { name: "Edit" }).click();
    await page.locator("textarea.editor").fill("typed before the session ended\n");
    const expires = Number(process.env.STEAD_UI_EXPIRES) * 1000;
    await page.waitForTimeout(Math.max(0, expires - Date.now()) + 1500);
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const dialog = page.locator(".overlay");
    await dialog.getByRole("alert").filter({ hasText: "session ended" }).waitFor();
    await page.screenshot({ path: `${artifacts}/session-ended.png` });
    check((await page.locator("textarea.editor").inputValue()) === "typed before the session ended\n", "the text is kept");
    await dialog.getByLabel("token").fill(admin);
    await dialog.getByRole("button", { name: "Sign in" }).click();
    await page.locator(".status.ok").waitFor();
    const saved = (await tool("read", { path: "/README.md" })).content;
    check(saved === "typed before the session ended\n", `saved after signing in again: ${saved}`);
    return { saved };
  },

  /** Schedules with their runs, hooks with their calls, and processes
   * with their output. */
  async schedules(page) {
    await api("PUT", `/agents/${agent}/schedules/soon`, { delay_ms: 1, exec: { command: "echo scheduled" } });
    await api("PUT", `/agents/${agent}/schedules/nightly`, { cron: "0 3 * * *", tz: "Europe/Paris", exec: { command: "echo nightly" } });
    await api("PUT", `/agents/${agent}/hooks/deploy`, { exec: { command: "echo deployed" } });
    // The one-shot schedule runs (the alarm is due at once).
    for (let i = 0; i < 100; i++) {
      const runs = (await api("GET", `/agents/${agent}/schedules/soon`)).runs;
      if (runs.some((run) => run.state === "succeeded")) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await signIn(page, admin);
    await page.getByRole("tab", { name: "Schedules" }).click();
    await page.locator('tr[data-schedule="nightly"]', { hasText: "0 3 * * * (Europe/Paris)" }).waitFor();
    await page.locator('tr[data-hook="deploy"]').waitFor();
    await page.locator('tr[data-schedule="soon"] .open-schedule').click();
    const run = page.locator(".runs tr[data-run] .state");
    await run.first().waitFor();
    const state = await run.first().innerText();
    check(state === "succeeded", `the run is shown: ${state}`);
    await page.screenshot({ path: `${artifacts}/schedules.png` });
    return { run: state };
  },

  /** The terminal tab on the light shell: type `echo hi`, see `hi`. */
  async terminal(page) {
    await signIn(page, admin);
    await page.getByRole("tab", { name: "Terminal" }).click();
    await page.getByRole("button", { name: "Light shell" }).click();
    await page.locator(".terminal-tab .status", { hasText: "session" }).waitFor();
    await page.locator(".terminal .xterm").click();
    await page.keyboard.type("echo hi\r");
    const rows = page.locator(".terminal .xterm-rows");
    await page.waitForFunction(() => {
      const lines = document.querySelector(".terminal .xterm-rows")?.innerText.split("\n") ?? [];
      return lines.some((line) => line.trim() === "hi");
    }, null, { timeout: 10000 });
    const screen = await rows.innerText();
    await page.screenshot({ path: `${artifacts}/terminal.png` });
    return { screen };
  },

  /** The timeline: create a checkpoint, change two files, see both in the
   * diff, restore one. */
  async timeline(page) {
    page.on("dialog", (dialog) => dialog.accept());
    await tool("write", { path: "/notes/a.txt", content: "a one\n" });
    await tool("write", { path: "/notes/b.txt", content: "b one\n" });
    await signIn(page, admin);
    await page.getByRole("tab", { name: "Timeline" }).click();
    await page.getByLabel("checkpoint name").fill("base");
    await page.getByRole("button", { name: "Create checkpoint" }).click();
    await page.locator(".timeline li.checkpoint", { hasText: "checkpoint base" }).waitFor();
    await tool("write", { path: "/notes/a.txt", content: "a two\n" });
    await tool("write", { path: "/notes/b.txt", content: "b two\n" });
    await page.locator(".timeline li.checkpoint", { hasText: "checkpoint base" }).getByRole("checkbox").check();
    const a = page.locator('.diff-file[data-path="/notes/a.txt"]');
    const b = page.locator('.diff-file[data-path="/notes/b.txt"]');
    await a.waitFor();
    await b.waitFor();
    check((await a.innerText()).includes("a two"), "a.txt's diff shows the new line");
    check((await b.innerText()).includes("b one"), "b.txt's diff shows the old line");
    check((await page.locator(".timeline li.audit").count()) > 0, "audit entries on the line");
    await page.screenshot({ path: `${artifacts}/timeline.png` });
    await a.getByRole("button", { name: "Restore this file" }).click();
    await page.locator(".status.ok", { hasText: "Restored /notes/a.txt" }).waitFor();
    const restored = (await tool("read", { path: "/notes/a.txt" })).content;
    const kept = (await tool("read", { path: "/notes/b.txt" })).content;
    check(restored === "a one\n" && kept === "b two\n", `restored one file only: ${restored} / ${kept}`);
    // The diff is shown again against now: only b.txt differs.
    await page.locator('.diff-file[data-path="/notes/a.txt"]').waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Undo last change" }).click();
    await page.locator(".status.ok", { hasText: "Undone" }).waitFor();
    const undone = (await tool("read", { path: "/notes/a.txt" })).content;
    check(undone === "a two\n", `undo took the restore back: ${undone}`);
    return { restored, kept, undone };
  },

  /** A job's output is followed live (seen before the job ends), and a job
   * is cancelled from the page. */
  async jobs(page) {
    await signIn(page, admin);
    await page.getByRole("tab", { name: "Jobs" }).click();
    const started = await api("POST", `/agents/${agent}/exec`, {
      command: "for i in 1 2 3 4; do echo tick $i; sleep 1; done",
      backend: "computer",
      detach: true,
    });
    const id = started.job.id;
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator(`tr[data-job="${id}"] .open-job`).click();
    const out = page.locator(".job .output");
    await out.filter({ hasText: "tick 1" }).waitFor();
    const early = await out.innerText();
    const during = (await api("GET", `/agents/${agent}/jobs/${id}`)).job.state;
    check(!early.includes("tick 4"), `output arrived before the end: ${early}`);
    await page.locator('.job-state[data-state="succeeded"]').waitFor({ timeout: 15000 });
    const whole = await out.innerText();
    check(whole === "tick 1\ntick 2\ntick 3\ntick 4\n", `every piece once: ${JSON.stringify(whole)}`);
    await page.screenshot({ path: `${artifacts}/jobs.png` });
    // Cancel.
    const long = await api("POST", `/agents/${agent}/exec`, { command: "echo waiting; sleep 30", backend: "computer", detach: true });
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator(`tr[data-job="${long.job.id}"] .open-job`).click();
    await out.filter({ hasText: "waiting" }).waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator('.job-state[data-state="cancelled"]').waitFor({ timeout: 15000 });
    const cancelled = (await api("GET", `/agents/${agent}/jobs/${long.job.id}`)).job.state;
    return { during, output: whole, cancelled };
  },

  /** A page a dev server serves, on its port's origin and through the port
   * route on the API's, can neither read the inspector's session nor act
   * with it. */
  async isolation(page, context) {
    const port = Number(process.env.STEAD_UI_PORT);
    await signIn(page, admin);
    await page.getByRole("tab", { name: "Processes" }).click();
    await page.locator(`.port[data-port="${port}"]`).getByRole("button", { name: "Share link" }).click();
    const link = page.locator("a.share-url");
    await link.waitFor();
    const href = await link.getAttribute("href");
    check(new URL(href).host !== new URL(base).host, `the port has its own origin: ${href}`);
    await page.screenshot({ path: `${artifacts}/processes.png` });
    const findings = {};
    for (const [where, url] of [["port_origin", href], ["port_route", `${base}/agents/${agent}/ports/${port}/`]]) {
      const served = await context.newPage();
      const said = [];
      served.on("console", (message) => said.push(message.text()));
      served.on("pageerror", (error) => said.push(error.message));
      await served.goto(url);
      const report = await served.locator("#out").filter({ hasText: "{" }).innerText({ timeout: 15000 })
        .catch(async () => { throw new Error(`${where} (${url}) never reported: ${said.join(" | ")} | ${await served.content()}`); });
      findings[where] = JSON.parse(report);
      await served.close();
    }
    for (const [where, found] of Object.entries(findings)) {
      check(!found.cookie.includes("stead_session"), `${where}: no session in document.cookie`);
      check(found.session.startsWith("blocked"), `${where}: the session route cannot be read: ${found.session}`);
      check(found.info.startsWith("blocked"), `${where}: the API cannot be read: ${found.info}`);
      check(found.ws === "refused", `${where}: the agent's socket refuses it: ${found.ws}`);
    }
    // Revoked from the page, the link opens nothing more (a fresh browser,
    // without the cookie the link left on the port's origin).
    await page.getByRole("button", { name: "Revoke" }).first().click();
    await page.locator("tr[data-share]", { hasText: "revoked" }).waitFor();
    const fresh = await context.browser().newContext();
    const after = await (await fresh.newPage()).goto(href);
    findings.after_revoke = after.status();
    await fresh.close();
    check(after.status() === 401, `a revoked link is refused: ${after.status()}`);
    const stolen = await fetch(`${base}/agents/${agent}/stat`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
      body: JSON.stringify({ path: "/stolen" }),
    });
    check(stolen.status === 404, `no write landed: stat answered ${stolen.status}`);
    return findings;
  },
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy|Refused/.test(message.text())) errors.push(message.text());
  });
  const run = scenarios[scenario];
  check(run, `a scenario named ${scenario}`);
  const findings = await run(page, context);
  check(errors.length === 0, `no page errors: ${errors.join(" | ")}`);
  console.log(JSON.stringify({ scenario, ...findings }));
} finally {
  await browser.close();
}
