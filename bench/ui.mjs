// stead-bench ui's browser side (bench/src/ui.rs starts it): in the
// system's Chromium through playwright-core, the time from navigation to an
// interactive file tree of the agent's root (every entry listed and
// clickable), against the floor of the same listing fetched by a plain
// client; and the page's size, as served and gzip-compressed.
// Environment: STEAD_UI_BASE, STEAD_UI_AGENT, STEAD_UI_TOKEN, STEAD_UI_FILES
// (the entries the root holds), STEAD_UI_SAMPLES, CHROMIUM. Prints one JSON
// line.

import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";

const base = process.env.STEAD_UI_BASE;
const agent = process.env.STEAD_UI_AGENT;
const token = process.env.STEAD_UI_TOKEN;
const files = Number(process.env.STEAD_UI_FILES);
const samples = Number(process.env.STEAD_UI_SAMPLES ?? "5");

/** The listing a plain client makes: every page of `ls /`. */
async function listing() {
  const started = performance.now();
  let cursor;
  let entries = 0;
  do {
    const response = await fetch(`${base}/agents/${agent}/ls`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ path: "/", limit: 10000, cursor }),
    });
    const page = await response.json();
    entries += page.entries.length;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  if (entries !== files) throw new Error(`ls found ${entries} entries, not ${files}`);
  return performance.now() - started;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/ui/`);
  await page.getByLabel("token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("header.top").waitFor();

  const tree = [];
  const floor = [];
  const transfers = [];
  const steps = [];
  for (let i = 0; i < samples; i++) {
    floor.push(await listing());
    const fresh = await context.newPage();
    const loaded = [];
    fresh.on("response", async (response) => {
      if (new URL(response.url()).pathname.startsWith("/ui/")) loaded.push(response);
    });
    await fresh.goto(`${base}/ui/#/agents/${encodeURIComponent(agent)}`);
    // Interactive: every entry is in the tree, drawn, and the last one
    // can be clicked (it opens its file).
    // The page marks when the root's listing is on the page and drawn.
    await fresh.waitForFunction(() => performance.getEntriesByName("stead:tree").length > 0, null, { timeout: 60000 });
    const count = await fresh.locator('.tree ul[data-dir="/"] > li').count();
    if (count !== files) throw new Error(`the tree shows ${count} entries, not ${files}`);
    tree.push(await fresh.evaluate(() => performance.getEntriesByName("stead:tree")[0].startTime));
    // Where the time went: each request's start and end, from navigation.
    steps.push(await fresh.evaluate(() => performance.getEntriesByType("resource")
      .map((r) => [new URL(r.name).pathname, Math.round(r.startTime), Math.round(r.responseEnd)])));
    await fresh.locator(".tree .entry").last().click();
    await fresh.locator(".viewer .code").waitFor();
    if (i === 0) {
      for (const response of loaded) {
        const body = await response.body();
        transfers.push({ path: new URL(response.url()).pathname, bytes: body.length, gzip: gzipSync(body).length });
      }
    }
    await fresh.close();
  }
  console.log(JSON.stringify({ tree_ms: tree, floor_ms: floor, page: transfers, requests: steps }));
} finally {
  await browser.close();
}
