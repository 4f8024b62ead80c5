import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { eventually, freePort, graphqlAt, runCli, startCli } from "./run-cli.js";

// addDynamicPartitions through a real `tributary dev` server.
let defsDir: string;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-dyn-defs-"));
  await writeFile(
    path.join(defsDir, "customers.ts"),
    `import { asset, dynamicPartitions } from "tributary";\n` +
      `export const profiles = asset({ key: "crm/profiles", partitions: dynamicPartitions("customers") }, async (ctx) => ({ id: ctx.partition.key }));\n`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

type Added = { addDynamicPartitions: { name: string; added: string[]; total: number } };
const add = (name: string, keys: string[]) =>
  `mutation { addDynamicPartitions(name: ${JSON.stringify(name)}, keys: ${JSON.stringify(keys)}) { name added total } }`;

describePostgres("addDynamicPartitions", () => {
  // A migrated database to start from: what the tests are about comes after a first start.
  const at = useCommandStore("tributary-dyn-data-");

  it("adds keys idempotently, rejects unknown sets and bad keys without writing, and the keys are plannable at once", async () => {
    const port = freePort();
    const dev = startCli(["dev", "--port", String(port), "--data-dir", at.dataDir, "--definitions", defsDir, "--processes", "1"], {
      env: at.env,
    });
    try {
      await eventually(
        async () => {
          const r = await graphqlAt<{ assets: unknown[] }>(port, "{ assets { key } }");
          return r.data?.assets.length ? true : undefined;
        },
        90_000,
        () => `dev to start\n${dev.output()}`,
      );

      const first = await graphqlAt<Added>(port, add("customers", ["c1", "c2"]));
      expect(first.data?.addDynamicPartitions).toEqual({ name: "customers", added: ["c1", "c2"], total: 2 });
      const again = await graphqlAt<Added>(port, add("customers", ["c2", "c3"]));
      expect(again.data?.addDynamicPartitions).toEqual({ name: "customers", added: ["c3"], total: 3 });

      const unknown = await graphqlAt<Added>(port, add("customerz", ["x"]));
      expect(unknown.errors?.[0]).toMatchObject({ extensions: { code: "DYNAMIC_PARTITIONS_UNKNOWN" } });
      expect(unknown.errors?.[0]?.message).toContain('"customers"');
      const bad = await graphqlAt<Added>(port, add("customers", ["c4", "a|b"]));
      expect(bad.errors?.[0]).toMatchObject({ extensions: { code: "PARTITION_KEY_INVALID" } });
      expect(bad.errors?.[0]?.message).toContain("keys[1]");

      const listed = await graphqlAt<{ asset: { partitions: { totalCount: number; nodes: { key: string }[] } } }>(
        port,
        '{ asset(key: "crm/profiles") { partitions { totalCount nodes { key } } } }',
      );
      expect(listed.data?.asset.partitions.nodes.map((n) => n.key)).toEqual(["c1", "c2", "c3"]);

      const run = await runCli(["materialize", "crm/profiles", "--all", "--wait", "--json", "--url", `http://127.0.0.1:${port}`]);
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { run: { steps: { partitionKey: string }[] } }).run.steps.map((s) => s.partitionKey)).toEqual([
        "c1",
        "c2",
        "c3",
      ]);
    } finally {
      dev.kill("SIGTERM");
      await new Promise((resolve) => dev.once("exit", resolve));
    }
  }, 180_000);
});
