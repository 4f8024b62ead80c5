import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, freePort, graphqlAt, ROOT, startCli } from "./run-cli.js";

// `npm start` as a user sees it: the demo definitions on a fresh embedded
// database, and automation materialising them with nobody asking.
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "tributary-demo-"));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

type Runs = { runs: { origin: string; status: string; steps: { assetKey: string; partitionKey: string }[] }[] };

describe("the demo under tributary dev", () => {
  it("runs cron and eager automation by itself, and explains its decisions", async () => {
    const port = freePort();
    const dev = startCli([
      "dev",
      "--port",
      String(port),
      "--data-dir",
      dataDir,
      "--definitions",
      path.join(ROOT, "asset-definitions"),
      "--processes",
      "1",
    ]);
    try {
      const done = (runs: Runs["runs"], key: string) =>
        runs
          .filter((r) => r.origin === "automation" && r.status === "success")
          .flatMap((r) => r.steps)
          .filter((s) => s.assetKey === key);
      const runs = await eventually(
        async () => {
          const r = await graphqlAt<Runs>(port, "{ runs(first: 500) { origin status steps { assetKey partitionKey } } }");
          const all = r.data?.runs ?? [];
          // raw_orders (cron + the last 14 days) → revenue_7d (eager, reads 7 days) → weekly_revenue (eager).
          return done(all, "shop/raw_orders").length >= 14 &&
            done(all, "shop/revenue_7d").length >= 1 &&
            done(all, "shop/weekly_revenue").length >= 1
            ? all
            : undefined;
        },
        240_000,
        () => `automation to materialise the demo\n${dev.output()}`,
      );
      expect(runs.every((r) => r.origin === "automation")).toBe(true);
      const why = await graphqlAt<{ automationEvaluations: { records: { decision: string }[] } }>(
        port,
        `{ automationEvaluations(assetKey: "shop/revenue_7d") { records { decision } } }`,
      );
      expect(why.data?.automationEvaluations.records.map((r) => r.decision)).toContain("requested");
    } finally {
      dev.kill("SIGINT");
      await new Promise((resolve) => dev.once("exit", resolve));
    }
  });
});
