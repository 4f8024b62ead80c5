import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LineageEvent } from "../../src/reconciler/index.js";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { runCli } from "../cli/run-cli.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tributary-ol-cli-"));
  await writeFile(
    path.join(dir, "lineage.ts"),
    `import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01" });
export const up = asset({ key: "ol/up", partitions: days }, async (ctx) => ctx.partition.key);
export const down = asset({ key: "ol/down", partitions: days, deps: { up } }, async (ctx, { up }) => ({ day: up }));
`,
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describePostgres("tributary with TRIBUTARY_OPENLINEAGE_FILE (a real child process)", () => {
  // A database of its own (Postgres; the events are the same on the embedded one) and a data directory.
  const at = useCommandStore("tributary-ol-cli-data-");
  const globals = () => ["--data-dir", at.dataDir, "--definitions", dir, "--url", "http://127.0.0.1:9"];

  it("writes the run's OpenLineage events before a one-off materialize exits", async () => {
    const file = path.join(dir, "lineage.jsonl");
    const env = { ...at.env, TRIBUTARY_OPENLINEAGE_FILE: file, TRIBUTARY_OPENLINEAGE_NAMESPACE: "tributary://cli-test" };
    const r = await runCli(["materialize", "ol/up", "ol/down", "--partition", "2025-01-03", "--wait", "--json", ...globals()], { env });
    expect(r.code, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout) as { run: { id: string } }).run.id;
    const events = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as LineageEvent);
    expect(events.map((e) => `${e.job.name} ${e.eventType}`)).toEqual([
      "ol/up START",
      "ol/up COMPLETE",
      "ol/down START",
      "ol/down COMPLETE",
    ]);
    expect(events.every((e) => e.job.namespace === "tributary://cli-test")).toBe(true);
    expect(events[3]!.inputs.map((d) => [d.namespace, d.name])).toEqual([["tributary://cli-test", "ol/up"]]);
    expect(events[3]!.run.facets["parent"]).toMatchObject({ run: { runId } });
  });

  it("refuses to start with a non-http(s) TRIBUTARY_OPENLINEAGE_URL, naming it", async () => {
    const r = await runCli(["materialize", "ol/up", "--partition", "2025-01-03", ...globals()], {
      env: { ...at.env, TRIBUTARY_OPENLINEAGE_URL: "file:///tmp/lineage" },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/OPENLINEAGE_CONFIG_INVALID.*TRIBUTARY_OPENLINEAGE_URL: "file:" URLs are not supported/);
  });
});
