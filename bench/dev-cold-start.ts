// Cold start of `tributary dev` to its first GraphQL answer listing the demo
// assets: once on a fresh data directory (PGlite initialises a new database)
// and once reopening it. Prints one JSON object.
import { printResult, startTributary, stopProcess, timed, withScope } from "./_setup.js";

async function firstAnswerMs(dataDir: string, port: number): Promise<number> {
  const listsAssets = async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ assets { key } }" }),
      });
      const body = (await res.json()) as { data?: { assets: unknown[] } };
      return (body.data?.assets.length ?? 0) > 0;
    } catch {
      return false; // not listening yet
    }
  };
  const { value: dev, ms } = await timed(() =>
    startTributary(["dev", "--port", String(port), "--data-dir", dataDir], { ready: listsAssets, timeoutMs: 120_000, pollMs: 20 }),
  );
  await stopProcess(dev.child);
  return ms;
}

await withScope(async (scope) => {
  const dataDir = await scope.tempDir("dev");
  const freshMs = await firstAnswerMs(dataDir, 3901);
  const reopenMs = await firstAnswerMs(dataDir, 3902);
  printResult({ bench: "dev-cold-start", freshDataDirMs: Math.round(freshMs), reopenedDataDirMs: Math.round(reopenMs) });
});
