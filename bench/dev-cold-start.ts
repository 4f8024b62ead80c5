// Cold start of `tributary dev` to its first GraphQL answer listing the demo
// assets: once on a fresh data directory (PGlite initialises a new database)
// and once reopening it. Prints one JSON object.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

async function firstAnswerMs(dataDir: string, port: number): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ["bin/tributary.mjs", "dev", "--port", String(port), "--data-dir", dataDir], {
    cwd: root,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`tributary dev exited with ${child.exitCode}: ${stderr}`);
      if (performance.now() - started > 120_000) throw new Error("no answer within 120 s");
      try {
        const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: "{ assets { key } }" }),
        });
        const body = (await res.json()) as { data?: { assets: unknown[] } };
        if ((body.data?.assets.length ?? 0) > 0) return performance.now() - started;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

const dataDir = await mkdtemp(path.join(tmpdir(), "tributary-bench-"));
try {
  const freshMs = await firstAnswerMs(dataDir, 3901);
  const reopenMs = await firstAnswerMs(dataDir, 3902);
  console.log(JSON.stringify({ bench: "dev-cold-start", freshDataDirMs: Math.round(freshMs), reopenedDataDirMs: Math.round(reopenMs) }));
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
