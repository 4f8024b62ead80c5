import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedDataDir } from "../support/data-dir-template.js";
import { eventually, graphqlAt, listeningPort, startCli } from "./run-cli.js";

// How `tributary dev` logs a client's mistakes: one info line each, no stack trace (those are for its own bugs).
let dir: string;
let dev: (ReturnType<typeof startCli> & { port: number }) | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tributary-client-errors-"));
  await writeFile(
    path.join(dir, "days.ts"),
    `import { asset, daily } from "tributary";\nexport const day = asset({ key: "log/day", partitions: daily({ start: "2025-01-01" }) }, async (ctx) => ctx.partition.key);\n`,
  );
  // A migrated embedded database to start from: what the test is about comes after a first start.
  await seedDataDir(path.join(dir, "data"));
  const child = startCli(["dev", "--port", "0", "--definitions", dir, "--data-dir", path.join(dir, "data"), "--processes", "1"]);
  const port = await listeningPort(child);
  dev = Object.assign(child, { port });
  await eventually(
    async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined),
    300_000,
    "tributary dev to load its definitions",
  );
}, 660_000);

afterAll(async () => {
  if (dev && dev.exitCode === null) {
    const exited = new Promise((resolve) => dev!.once("exit", resolve));
    dev.kill("SIGINT");
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
});

const REPORT = "mutation ($input: ReportAssetEventInput!) { reportAssetEvent(input: $input) { eventId } }";

describe("tributary dev and a client's mistakes", () => {
  it("logs an unknown asset and a bad partition as one info line each, and nothing of them or of an invalid query as a stack trace", async () => {
    const server = dev!;
    const before = server.output().length;
    const unknown = await graphqlAt(server.port, REPORT, { input: { assetKey: "log/nope", partition: "2025-01-02" } });
    expect(unknown.errors?.[0]?.extensions?.code).toBe("GRAPH_UNKNOWN_ASSET");
    const badPartition = await graphqlAt(server.port, REPORT, { input: { assetKey: "log/day", partition: "2025-02-30" } });
    const partitionCode = badPartition.errors?.[0]?.extensions?.code;
    expect(partitionCode).toMatch(/^[A-Z_]+$/);
    const invalid = await graphqlAt(server.port, "{ assets { nosuchfield } }");
    expect(invalid.errors?.[0]?.message).toMatch(/nosuchfield/);

    const logged = await eventually(
      async () => {
        const text = server.output().slice(before);
        return text.includes("GRAPH_UNKNOWN_ASSET") && text.includes("2025-02-30") ? text : undefined;
      },
      30_000,
      "the mistakes to be logged",
    );
    const lines = logged.split("\n").filter((l) => l.trim() !== "");
    expect(lines.filter((l) => l.includes("GRAPH_UNKNOWN_ASSET"))).toEqual([
      expect.stringMatching(/ info graphql: GRAPH_UNKNOWN_ASSET: .*log\/nope/),
    ]);
    expect(lines.filter((l) => l.includes("2025-02-30"))).toEqual([
      expect.stringMatching(new RegExp(` info graphql: ${partitionCode}: .*2025-02-30`)),
    ]);
    expect(logged).not.toMatch(/\bERR\b/);
    expect(logged).not.toMatch(/^\s+at /m);
  });
});
