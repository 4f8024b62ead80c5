import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { eventually, freePort, graphqlAt, ROOT, runCli, startCli } from "./run-cli.js";

// The demo's source asset as `npm start` shows it: the partner's files are
// missing, the stand-in producer writes the latest ones late, the triggerer
// observes them and the eager reader runs, with nobody asking.
let demoData: string;
const stores: CommandStore[] = [];
beforeAll(async () => {
  demoData = await mkdtemp(path.join(tmpdir(), "tributary-demo-landing-"));
});
afterAll(async () => {
  await Promise.all([rm(demoData, { recursive: true, force: true }), ...stores.map((s) => s.remove())]);
});

/** A database of its own, already migrated, and a data directory. */
async function store(prefix: string): Promise<CommandStore> {
  const s = await commandStore(prefix);
  stores.push(s);
  return s;
}

type Runs = { runs: { origin: string; status: string; steps: { assetKey: string; partitionKey: string; state: string }[] }[] };
type Status = {
  asset: {
    partitionStatus: { counts: { missing: number; materialized: number; timedOut: number; total: number } };
    partitions: { nodes: { key: string; status: string }[] };
  };
};

describePostgres("the demo's source asset under tributary dev", () => {
  it("observes the partner's late files and runs their eager reader", { timeout: 300_000 }, async () => {
    // A migrated database to start from: the source and its reader are the subject, not a first start.
    const at = await store("tributary-demo-source-");
    const port = freePort();
    const env = { ...at.env, TRIBUTARY_DEMO_DATA: demoData };
    const dev = startCli(
      ["dev", "--port", String(port), "--data-dir", at.dataDir, "--definitions", path.join(ROOT, "asset-definitions"), "--processes", "1"],
      { env },
    );
    try {
      const read = await eventually(
        async () => {
          const r = await graphqlAt<Runs>(port, "{ runs(first: 500) { origin status steps { assetKey partitionKey state } } }");
          const steps = (r.data?.runs ?? []).filter((x) => x.origin === "automation").flatMap((x) => x.steps);
          const rates = steps.filter((s) => s.assetKey === "partner/delivery_rate" && s.state === "success");
          return rates.length >= 3 ? { steps, rates: rates.map((s) => s.partitionKey).sort() } : undefined;
        },
        240_000,
        () => `the delivery rate of three observed days\n${dev.output()}`,
      );
      // Exactly the days the stand-in delivered, each observed once its file landed.
      const exported = read.steps
        .filter((s) => s.assetKey === "partner/simulated_export" && s.state === "success")
        .map((s) => s.partitionKey)
        .sort();
      expect(read.rates).toEqual(exported);
      expect((await readdir(path.join(demoData, "landing"))).sort()).toEqual(exported.map((d) => `deliveries-${d}.json`));

      const last = exported.at(-1)!;
      const status = await graphqlAt<Status>(
        port,
        `{ asset(key: "partner/deliveries") {
             partitionStatus { counts { missing materialized timedOut total } }
             partitions(from: "${exported[0]}", to: "${last}") { nodes { key status } } } }`,
      );
      expect(status.errors).toBeUndefined();
      const { counts } = status.data!.asset.partitionStatus;
      expect(counts).toMatchObject({ materialized: 3, timedOut: 0, missing: counts.total - 3 });
      expect(status.data!.asset.partitions.nodes.map((n) => n.status)).toEqual(["MATERIALIZED", "MATERIALIZED", "MATERIALIZED"]);

      // The CLI through the running server lists the status too.
      const cli = await runCli([
        "partitions",
        "partner/deliveries",
        "--from",
        exported[0]!,
        "--to",
        last,
        "--url",
        `http://127.0.0.1:${port}`,
      ]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(new RegExp(`${last}\\s.*\\smaterialized`));
    } finally {
      dev.kill("SIGINT");
      await new Promise((resolve) => dev.once("exit", resolve));
    }
  });
});

describePostgres("a source asset's timeout under tributary dev", () => {
  it("times out the partitions that do not appear: status timed_out, one alert to the owner each; the one that did is observed", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "tributary-source-timeout-"));
    try {
      const landing = path.join(root, "landing");
      const defs = path.join(root, "defs");
      await mkdir(landing, { recursive: true });
      await mkdir(defs, { recursive: true });
      // The days are read once and the partitions end today: a run across midnight sees the same three.
      const now = Date.now();
      const day = (n: number) => new Date(now - n * 86_400_000).toISOString().slice(0, 10);
      await writeFile(
        path.join(defs, "feed.ts"),
        `import { daily, fileExists, sourceAsset } from "tributary";
export const feed = sourceAsset({ key: "late/feed", partitions: daily({ start: "${day(3)}", end: "${day(0)}" }), owner: "team:late",
  observe: fileExists(${JSON.stringify(path.join(landing, "{partition}.json"))}), pollInterval: "1s", timeout: "20s" });
`,
      );
      await writeFile(path.join(landing, `${day(2)}.json`), "{}");
      // A migrated database to start from: the timeouts are the subject, not a first start.
      const at = await store("tributary-source-timeout-data-");
      const port = freePort();
      const dev = startCli(["dev", "--port", String(port), "--data-dir", at.dataDir, "--definitions", defs, "--processes", "1"], {
        env: at.env,
      });
      try {
        type Ranges = {
          asset: {
            partitionStatus: {
              counts: { materialized: number; timedOut: number; missing: number };
              ranges: { status: string; from: string; to: string }[];
            };
          };
        };
        const status = await eventually(
          async () => {
            if (dev.exitCode !== null || dev.signalCode !== null)
              throw new Error(`tributary dev exited with ${dev.exitCode ?? dev.signalCode}:\n${dev.output()}`);
            const r = await graphqlAt<Ranges>(
              port,
              `{ asset(key: "late/feed") { partitionStatus { counts { materialized timedOut missing } ranges { status from to } } } }`,
            );
            const counts = r.data?.asset.partitionStatus.counts;
            return counts && counts.timedOut === 2 && counts.materialized === 1 ? r.data!.asset.partitionStatus : undefined;
          },
          // Dev's start (minutes on a loaded machine) is part of the wait.
          300_000,
          () => `two timed-out partitions and one observed\n${dev.output()}`,
        );
        expect(status.counts.missing).toBe(0);
        expect(status.ranges).toEqual([
          { status: "TIMED_OUT", from: day(3), to: day(3) },
          { status: "MATERIALIZED", from: day(2), to: day(2) },
          { status: "TIMED_OUT", from: day(1), to: day(1) },
        ]);
        const alerts = await graphqlAt<{ alerts: { kind: string; owner: string | null; partitionKey: string | null }[] }>(
          port,
          `{ alerts(assetKey: "late/feed") { kind owner partitionKey } }`,
        );
        expect(alerts.data?.alerts.map((a) => [a.kind, a.owner, a.partitionKey]).sort()).toEqual([
          ["observation_timed_out", "team:late", day(3)],
          ["observation_timed_out", "team:late", day(1)],
        ]);
        const cli = await runCli(["partitions", "late/feed", "--url", `http://127.0.0.1:${port}`]);
        expect(cli.stdout).toMatch(new RegExp(`${day(1)}\\s.*\\stimed out`));
      } finally {
        dev.kill("SIGINT");
        await new Promise((resolve) => dev.once("exit", resolve));
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }, 420_000);
});
