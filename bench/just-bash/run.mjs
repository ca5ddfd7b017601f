// Runs one script of `stead-bench shell` through just-bash.
//
// Reads a JSON request on stdin:
//   { "dir": "/tmp/...", "script": "grep -rn needle .", "runs": 5, "budget_ms": 20000 }
// loads every file under `dir` into just-bash's in-memory filesystem under
// /work (loading is not timed), runs `script` there `runs` times on the same
// Bash instance (files persist between runs, shell state does not; no run
// starts once the runs so far took `budget_ms` in all), and prints one JSON
// line:
//   { "times_ms": [..], "stdout": "..", "stderr": "..", "exit_code": 0 }
// with the output of the last run, or { "error": ".." } if just-bash threw.
//
// just-bash's default execution limits (100,000 loop iterations or
// commands, ...) are raised so the benchmark measures speed, not limits.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Bash } from "just-bash";

const ROOT = "/work";
const NO_LIMIT = 1e12;

function readStdin() {
  return readFileSync(0, "utf8");
}

/** Every regular file under `dir`, keyed by its path under ROOT. */
function loadTree(dir, prefix = ROOT, files = {}) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      loadTree(path, `${prefix}/${entry.name}`, files);
    } else if (entry.isFile()) {
      files[`${prefix}/${entry.name}`] = readFileSync(path, "utf8");
    }
  }
  return files;
}

async function main() {
  const request = JSON.parse(readStdin());
  const bash = new Bash({
    files: loadTree(request.dir),
    cwd: ROOT,
    env: { LC_ALL: "C" },
    executionLimits: {
      maxCommandCount: NO_LIMIT,
      maxLoopIterations: NO_LIMIT,
      maxAwkIterations: NO_LIMIT,
      maxSedIterations: NO_LIMIT,
      maxJqIterations: NO_LIMIT,
      maxWorkUnits: NO_LIMIT,
    },
  });
  // The directory must exist even when no file was loaded.
  await bash.exec(`mkdir -p ${ROOT}`);
  const times = [];
  const spent = () => times.reduce((sum, time) => sum + time, 0);
  let result;
  while (times.length < request.runs && spent() < request.budget_ms) {
    const start = performance.now();
    result = await bash.exec(request.script, { cwd: ROOT });
    times.push(performance.now() - start);
  }
  return {
    times_ms: times,
    stdout: result.stdout,
    stderr: result.stderr,
    exit_code: result.exitCode,
  };
}

try {
  process.stdout.write(JSON.stringify(await main()) + "\n");
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + "\n");
  process.exitCode = 1;
}
