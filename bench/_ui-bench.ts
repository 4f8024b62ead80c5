// What the browser benchmarks share: a real `tributary dev` on a Postgres database, and percentiles.
import { spawn } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");

/** `tributary dev` on `url` with the definitions in `definitionsDir`; resolves once GraphQL serves them. */
export async function startDev(url: string, definitionsDir: string): Promise<{ port: number; stop: () => Promise<void> }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(process.execPath, [path.join(ROOT, "bin/tributary.mjs"), "dev", "--port", String(port), "--definitions", definitionsDir, "--processes", "1"], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", DATABASE_URL: url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tributary dev exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`tributary dev did not serve its definitions in time:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ definitionsVersion { version } }" }),
      });
      const body = (await res.json()) as { data?: { definitionsVersion: { version: number } | null } };
      if (body.data?.definitionsVersion) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    port,
    stop: async () => {
      child.kill("SIGINT");
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

export const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const pick = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! * 10) / 10;
  return { runs: sorted.length, p50: pick(0.5), p95: pick(0.95), max: pick(1) };
};
