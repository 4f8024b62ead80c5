// What the browser benchmarks share: a real `tributary dev` on a Postgres database, headless Chromium, and percentiles.
import { chromium, type Browser } from "playwright-core";
import { p50p95max, startTributary, stopProcess, type BenchScope } from "./_setup.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** `tributary dev` on `url` with the definitions in `definitionsDir`, once GraphQL serves them; stopped when the scope closes. */
export async function startDev(scope: BenchScope, url: string, definitionsDir: string): Promise<{ port: number }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const servesDefinitions = async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ definitionsVersion { version } }" }),
      });
      const body = (await res.json()) as { data?: { definitionsVersion: { version: number } | null } };
      return Boolean(body.data?.definitionsVersion);
    } catch {
      return false; // not listening yet
    }
  };
  const dev = await startTributary(["dev", "--port", String(port), "--definitions", definitionsDir, "--processes", "1"], {
    env: { NO_COLOR: "1", DATABASE_URL: url },
    stdout: true,
    ready: servesDefinitions,
    timeoutMs: 300_000,
    pollMs: 200,
  });
  scope.onClose(() => stopProcess(dev.child, "SIGINT", 15_000));
  return { port };
}

/** Headless Chromium (CHROMIUM_PATH, default /usr/bin/chromium), closed when the scope closes. */
export async function launchChromium(scope: BenchScope): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
  scope.onClose(() => browser.close());
  return browser;
}

export const stats = (values: number[]) => ({ runs: values.length, ...p50p95max(values) });
