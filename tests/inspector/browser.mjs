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
    check(csp && csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), `CSP: ${csp}`);
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

    // Someone else writes while the user edits: the save is refused and
    // their version shown; the user's text stays.
    await page.locator("textarea.editor").fill("mine\n");
    await tool("write", { path: "/src/main.rs", content: "theirs\n" });
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator(".status.conflict").waitFor();
    check((await page.locator("textarea.editor").inputValue()) === "mine\n", "the user's text is kept");
    check((await page.locator(".theirs .code .text").innerText()).includes("theirs"), "their version is shown");
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
