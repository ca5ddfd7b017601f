// Shared by the MCP end-to-end clients (tests/mcp.rs runs them): the
// endpoint and tokens from the environment, a write over plain HTTP, and
// polling with a deadline.
import assert from "node:assert/strict";

/** The test's endpoint and credentials, from the environment tests/mcp.rs sets. */
export function env() {
  const need = (name) => {
    const value = process.env[name];
    assert.ok(value, `${name} must be set`);
    return value;
  };
  return {
    base: need("STEAD_BASE"),
    agent: need("STEAD_AGENT"),
    admin: need("STEAD_ADMIN_TOKEN"),
    token: need("STEAD_TOKEN"),
    readToken: need("STEAD_READ_TOKEN"),
    get url() {
      return `${this.base}/agents/${this.agent}/mcp`;
    },
  };
}

/** Headers carrying a bearer token. */
export function bearer(token) {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** POSTs a file tool over the HTTP API (not MCP). */
export async function httpTool(e, tool, body) {
  const response = await fetch(`${e.base}/agents/${e.agent}/${tool}`, {
    method: "POST",
    headers: { authorization: `Bearer ${e.admin}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, `${tool} over HTTP: ${await response.clone().text()}`);
  return response.json();
}

/** Waits until `check()` is truthy, at most `ms`. */
export async function until(what, check, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A tool call's structured answer, asserting it did not fail. */
export async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError, false, `${name}: ${JSON.stringify(result.content)}`);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

/** The text of an output page read from `from`, checking that its pieces
 * follow each other with no gap or overlap and that `next` is where it ended. */
function pageText(page, from) {
  let at = from;
  let text = "";
  for (const piece of page.output) {
    assert.equal(piece.offset, at);
    at += Buffer.byteLength(piece.data);
    text += piece.data;
  }
  assert.equal(page.next, at);
  return text;
}

/** The whole output of a detached job, read page by page from offset 0. */
export async function jobOutput(client, job) {
  let from = 0;
  let text = "";
  let pages = 0;
  for (;;) {
    const page = await call(client, "job_output", { job, from, limit: 4 });
    pages += 1;
    text += pageText(page, from);
    from = page.next;
    if (page.done) return { text, pages, state: page.state };
    if (page.output.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A running process's output, followed by offset until it holds `expected`. */
export async function followProcess(client, id, expected) {
  let from = 0;
  let text = "";
  return until(
    `${JSON.stringify(expected)} from process ${id}`,
    async () => {
      const page = await call(client, "process_output", { id, from });
      text += pageText(page, from);
      from = page.next;
      return text.includes(expected) && text;
    },
    60000,
  );
}

/** The scenario both revisions run: every tool kind, a job, a process, a
 * resource. */
export async function exercise(client, label) {
  const dir = `/e2e-${label}`;
  const wrote = await call(client, "write", { path: `${dir}/notes.md`, content: "one\ntwo\none more\n" });
  assert.equal(wrote.size, 17);
  const read = await call(client, "read", { path: `${dir}/notes.md`, offset: 2, limit: 1 });
  assert.equal(read.content, "two\n");
  const edited = await call(client, "edit", {
    path: `${dir}/notes.md`,
    edits: [{ old: "two", new: "TWO" }, { old: "one", new: "1", replace_all: true }],
  });
  assert.equal(edited.replacements, 3);
  const patched = await call(client, "apply_patch", {
    patch: `*** Begin Patch\n*** Add File: ${dir}/added.txt\n+new file\n*** Update File: ${dir}/notes.md\n@@\n-1 more\n+one more line\n*** End Patch\n`,
  });
  assert.deepEqual(patched.files.map((f) => f.path), [`${dir}/added.txt`, `${dir}/notes.md`]);
  const grep = await call(client, "grep", { pattern: "TWO|new", regex: true, path: dir, output: "files" });
  assert.deepEqual(grep.files, [`${dir}/added.txt`, `${dir}/notes.md`]);
  const bash = await call(client, "bash", { command: `cat ${dir}/notes.md | wc -l`, backend: "shell" });
  assert.equal(bash.stdout.trim(), "3");
  const started = await call(client, "bash", {
    command: "for i in 1 2 3 4 5; do echo line$i; done",
    backend: "shell",
    detach: true,
  });
  const job = started.job.id;
  const output = await jobOutput(client, job);
  assert.equal(output.text, "line1\nline2\nline3\nline4\nline5\n");
  assert.equal(output.state, "succeeded");
  // Time travel: a named checkpoint, a change, its diff and restore, and
  // the undo of a later write.
  const name = `mcp-${label}`;
  const taken = await call(client, "checkpoint", { name, note: "before the scratch file" });
  assert.equal(taken.checkpoint.name, name);
  await call(client, "write", { path: `${dir}/scratch.txt`, content: "scratch\n" });
  const diff = await call(client, "diff", { from: name, paths: [dir] });
  assert.deepEqual(diff.entries.map((e) => [e.path, e.change]), [[`${dir}/scratch.txt`, "added"]]);
  const restored = await call(client, "restore", { checkpoint: name, paths: [dir] });
  assert.deepEqual(restored.restored.changes.map((e) => e.path), [`${dir}/scratch.txt`]);
  await call(client, "write", { path: `${dir}/notes.md`, content: "overwritten\n" });
  const undone = await call(client, "undo", {});
  assert.equal(undone.undone.checkpoint.operation, "tool:write");
  const listed = await call(client, "checkpoint_list", { limit: 200 });
  assert.ok(listed.checkpoints.some((c) => c.name === name), "the named checkpoint is listed");
  // A long-running process on the computer: started, listed, its output
  // followed by offset until its line shows, then stopped for good.
  const line = `hello-from-process-${label}\n`;
  const launched = await call(client, "process_start", {
    command: `echo ${line.trim()}; exec sleep 300`,
    cwd: dir,
  });
  assert.equal(launched.process.state, "running");
  const id = launched.process.id;
  const processes = await call(client, "process_list", {});
  assert.deepEqual(
    processes.processes.filter((p) => p.id === id).map((p) => p.state),
    ["running"],
  );
  const processText = await followProcess(client, id, line);
  const stopped = await call(client, "process_stop", { id, grace_ms: 1000 });
  assert.equal(stopped.process.stopped, true);
  const after = await call(client, "process_get", { id });
  const ended = await call(client, "process_output", { id, from: 0 });
  assert.equal(ended.done, true, "its log is complete once it is stopped");
  const resource = await client.readResource({ uri: `file://${dir}/notes.md` });
  assert.deepEqual(resource.contents, [
    { uri: `file://${dir}/notes.md`, mimeType: "text/markdown", text: "1\nTWO\none more line\n" },
  ]);
  const failed = await client.callTool({ name: "read", arguments: { path: `${dir}/missing` } });
  assert.equal(failed.isError, true);
  assert.equal(failed.structuredContent.error.code, "ENOENT");
  return {
    job,
    jobPages: output.pages,
    jobText: output.text,
    processText,
    processState: after.process.state,
    processJob: ended.state,
    file: resource.contents[0].text,
  };
}

/** Prints the summary tests/mcp.rs reads (the last line of stdout). */
export function report(summary) {
  console.log(JSON.stringify(summary));
}
