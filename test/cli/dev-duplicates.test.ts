import { mkdir, mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, graphqlAt, runCli, startDev, type DevServer } from "./run-cli.js";

// `tributary dev` on a definitions directory that gains a duplicate key, and on problems that span files.
let dataDir: string;
let defsDir: string;
let dev: DevServer | undefined;

const RAW_ORDERS = `import { asset, daily } from "tributary";
export const rawOrders = asset({ key: "shop/raw_orders", partitions: daily({ start: "2025-01-01" }) }, async () => ({ rows: 1 }));
`;
const REVENUE = `import { asset, daily, dep, timeWindow } from "tributary";
export const revenue7d = asset(
  { key: "shop/revenue_7d", partitions: daily({ start: "2025-01-01" }), deps: { orders: dep("shop/raw_orders", timeWindow({ startOffset: -6 })) } },
  async () => 1,
);
`;
// A copy that forgot to change the key: unpartitioned, so the trailing-window reader could not read it.
const DUPLICATE = `import { asset } from "tributary";
export const copied = asset({ key: "shop/raw_orders" }, async () => ({ rows: 2 }));
export const fine = asset({ key: "zz/fine" }, async () => 3);
`;
const unpartitioned = (key: string) => `import { asset } from "tributary";\nexport const a = asset({ key: "${key}" }, async () => 1);\n`;
const dailyAsset = (key: string) =>
  `import { asset, daily } from "tributary";\nexport const a = asset({ key: "${key}", partitions: daily({ start: "2025-01-01" }) }, async () => 1);\n`;
const MAP_DOWN = `import { asset, daily, dep, timeWindow } from "tributary";
export const down = asset({ key: "map/down", partitions: daily({ start: "2025-01-01" }), deps: { up: dep("map/up", timeWindow()) } }, async () => 1);
`;

interface Problem {
  code: string;
  message: string | null;
  assetKey: string | null;
}
interface FileView {
  path: string;
  status: string;
  code: string | null;
  message: string | null;
  problems: Problem[];
}
interface View {
  assets: { key: string; file: string; partitionsDefinition: unknown }[];
  definitionErrors: FileView[];
  definitionFiles: FileView[];
}
const QUERY = `{
  assets { key file partitionsDefinition }
  definitionErrors { path status code message problems { code message assetKey } }
  definitionFiles { path status code message problems { code message assetKey } }
}`;

async function view(): Promise<View> {
  const r = await graphqlAt<View>(dev!.port, QUERY);
  if (!r.data) throw new Error(`GraphQL failed: ${JSON.stringify(r.errors)}`);
  return r.data;
}

/** Waits until the served state satisfies `ready` (reloads are asynchronous), and returns it. */
function until(ready: (v: View) => boolean, what: string): Promise<View> {
  return eventually(
    async () => {
      const v = await view();
      return ready(v) ? v : undefined;
    },
    60_000,
    what,
  );
}

const errorPaths = (v: View) => v.definitionErrors.map((f) => f.path).sort();
const assetOf = (v: View, key: string) => v.assets.find((a) => a.key === key);
const fileOf = (v: View, p: string) => v.definitionFiles.find((f) => f.path === p);

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-dup-data-"));
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-dev-dup-defs-"));
  for (const sub of ["shop", "dup", "map", "zz"]) await mkdir(path.join(defsDir, sub));
  await writeFile(path.join(defsDir, "shop/raw_orders.ts"), RAW_ORDERS);
  await writeFile(path.join(defsDir, "shop/revenue.ts"), REVENUE);
  // Two files that share a key from the start: neither was loaded before, so neither is.
  await writeFile(path.join(defsDir, "dup/a.ts"), unpartitioned("dup/key"));
  await writeFile(path.join(defsDir, "dup/b.ts"), unpartitioned("dup/key"));
  // A trailing-window reader of an unpartitioned upstream: a mapping problem of map/down.ts caused by map/up.ts.
  await writeFile(path.join(defsDir, "map/up.ts"), unpartitioned("map/up"));
  await writeFile(path.join(defsDir, "map/down.ts"), MAP_DOWN);
  dev = await startDev({ dataDir, definitionsDir: defsDir, seed: true });
}, 300_000);

afterAll(async () => {
  await dev?.stop();
  await rm(dataDir, { recursive: true, force: true });
  await rm(defsDir, { recursive: true, force: true });
});

describe("tributary dev with duplicate keys and problems across files", () => {
  it("reports every problem with its message, and the files whose definitions were left out as in error", async () => {
    const v = await until((x) => x.definitionErrors.length > 0 && x.assets.length > 0, "the first load's problems");
    expect(errorPaths(v)).toEqual(["dup/a.ts", "dup/b.ts", "map/down.ts"]);
    for (const f of v.definitionErrors) {
      expect(f.status, f.path).toBe("error");
      expect(f.message, f.path).toEqual(expect.any(String));
      expect(f.problems.length, f.path).toBeGreaterThan(0);
      for (const p of f.problems) expect(p.message, f.path).toEqual(expect.any(String));
    }
    const a = v.definitionErrors.find((f) => f.path === "dup/a.ts")!;
    expect(a.code).toBe("GRAPH_DUPLICATE_KEY");
    expect(a.message).toContain('asset "dup/key"');
    expect(a.message).toContain("dup/a.ts");
    expect(a.message).toContain("dup/b.ts");
    const down = v.definitionErrors.find((f) => f.path === "map/down.ts")!;
    expect(down.code).toBe("GRAPH_INCOMPATIBLE_MAPPING");
    expect(down.message).toContain('"map/up"');
    // definitionFiles says the same; the files that caused nothing wrong are ok.
    expect(fileOf(v, "dup/a.ts")?.status).toBe("error");
    expect(fileOf(v, "map/down.ts")?.status).toBe("error");
    for (const ok of ["map/up.ts", "shop/raw_orders.ts", "shop/revenue.ts"])
      expect(fileOf(v, ok)).toMatchObject({ status: "ok", message: null, problems: [] });
    expect(v.assets.map((x) => x.key).sort()).toEqual(["map/up", "shop/raw_orders", "shop/revenue_7d"]);
  });

  it("keeps the loaded definition when a new file duplicates its key, across a restart, and reports only the new file", async () => {
    await writeFile(path.join(defsDir, "zz/dup.ts"), DUPLICATE);
    let v = await until((x) => errorPaths(x).includes("zz/dup.ts") && assetOf(x, "zz/fine") !== undefined, "the duplicate to be reported");
    const check = (x: View) => {
      expect(assetOf(x, "shop/raw_orders")).toMatchObject({
        file: "shop/raw_orders.ts",
        partitionsDefinition: expect.objectContaining({ kind: "time" }),
      });
      expect(assetOf(x, "shop/revenue_7d")).toBeDefined();
      // The rest of the new file loads.
      expect(assetOf(x, "zz/fine")?.file).toBe("zz/dup.ts");
      expect(errorPaths(x)).toEqual(["dup/a.ts", "dup/b.ts", "map/down.ts", "zz/dup.ts"]);
      const dup = x.definitionErrors.find((f) => f.path === "zz/dup.ts")!;
      expect(dup).toMatchObject({ status: "error", code: "GRAPH_DUPLICATE_KEY" });
      expect(dup.problems).toEqual([expect.objectContaining({ code: "GRAPH_DUPLICATE_KEY", assetKey: "shop/raw_orders" })]);
      expect(dup.message).toContain('zz/dup.ts: asset "shop/raw_orders"');
      expect(dup.message).toContain("shop/raw_orders.ts");
      expect(dup.message).toContain("The definition in shop/raw_orders.ts (export rawOrders) is kept");
      expect(fileOf(x, "shop/raw_orders.ts")).toMatchObject({ status: "ok", problems: [] });
    };
    check(v);
    expect(dev!.output()).toContain("The definition in shop/raw_orders.ts (export rawOrders) is kept");

    // A restart finds both files: the stored state says which definition was loaded.
    await dev!.stop();
    dev = await startDev({ dataDir, definitionsDir: defsDir });
    v = await until(
      (x) => errorPaths(x).includes("zz/dup.ts") && assetOf(x, "zz/fine") !== undefined,
      "the duplicate to be reported after the restart",
    );
    check(v);
  }, 300_000);

  it("agrees with tributary check: on the project it keeps the definition loaded before; without a previous load it leaves out both", async () => {
    const r = await runCli(["check", "--json", "--definitions", defsDir], { timeoutMs: 170_000 });
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout) as {
      ok: boolean;
      assets: { key: string }[];
      files: { file: string; status: string }[];
      problems: { code: string; file: string; assetKey: string; files: string[]; message: string }[];
    };
    expect(out.ok).toBe(false);
    const dupProblems = out.problems.filter((p) => p.assetKey === "shop/raw_orders");
    expect(dupProblems.map((p) => [p.code, p.file])).toEqual([
      ["GRAPH_DUPLICATE_KEY", "shop/raw_orders.ts"],
      ["GRAPH_DUPLICATE_KEY", "zz/dup.ts"],
    ]);
    for (const p of dupProblems) {
      expect(p.files).toEqual(["shop/raw_orders.ts", "zz/dup.ts"]);
      expect(p.message).toContain("shop/raw_orders.ts (export rawOrders) and zz/dup.ts (export copied)");
    }
    // The same duplicates dev reports, and files whose definitions are left out are in error there too.
    const fileStatus = Object.fromEntries(out.files.map((f) => [f.file, f.status]));
    expect(fileStatus).toMatchObject({
      "zz/dup.ts": "error",
      "shop/raw_orders.ts": "error",
      "dup/a.ts": "error",
      "dup/b.ts": "error",
      "map/up.ts": "ok",
    });
    expect(out.assets.map((a) => a.key)).not.toContain("shop/raw_orders");

    // On the project's data directory, check knows which definition was loaded before, and decides as dev does.
    const onProject = await runCli(["check", "--json", "--definitions", defsDir, "--data-dir", dataDir], { timeoutMs: 170_000 });
    expect(onProject.code, onProject.stderr).toBe(1);
    const known = JSON.parse(onProject.stdout) as typeof out & { previousLoad: string | null };
    expect(known.previousLoad).toBe(dev!.url);
    const kept = known.problems.filter((p) => p.assetKey === "shop/raw_orders");
    expect(kept.map((p) => [p.code, p.file])).toEqual([["GRAPH_DUPLICATE_KEY", "zz/dup.ts"]]);
    expect(kept[0]!.message).toContain("The definition in shop/raw_orders.ts (export rawOrders) is kept");
    expect(Object.fromEntries(known.files.map((f) => [f.file, f.status]))).toMatchObject({
      "zz/dup.ts": "error",
      "shop/raw_orders.ts": "ok",
    });
    expect(known.assets.map((a) => a.key)).toContain("shop/raw_orders");
  }, 360_000);

  it("clears an error as soon as its cause is gone, without the file being touched", async () => {
    // The copy goes: nothing is left in error for it, and the graph is as before.
    await unlink(path.join(defsDir, "zz/dup.ts"));
    let v = await until((x) => !errorPaths(x).includes("zz/dup.ts") && assetOf(x, "zz/fine") === undefined, "the duplicate's error to go");
    expect(errorPaths(v)).toEqual(["dup/a.ts", "dup/b.ts", "map/down.ts"]);
    expect(assetOf(v, "shop/raw_orders")?.file).toBe("shop/raw_orders.ts");

    // One of two files sharing a key goes: the other, untouched, loads.
    await unlink(path.join(defsDir, "dup/b.ts"));
    v = await until((x) => !errorPaths(x).includes("dup/b.ts") && assetOf(x, "dup/key") !== undefined, "dup/b.ts to go");
    expect(errorPaths(v)).toEqual(["map/down.ts"]);
    expect(fileOf(v, "dup/a.ts")).toMatchObject({ status: "ok", message: null, problems: [] });
    expect(assetOf(v, "dup/key")?.file).toBe("dup/a.ts");

    // The upstream becomes partitioned: the untouched downstream's mapping fits, and its error goes.
    await writeFile(path.join(defsDir, "map/up.ts"), dailyAsset("map/up"));
    v = await until((x) => x.definitionErrors.length === 0 && assetOf(x, "map/down") !== undefined, "the mapping problem to clear");
    expect(fileOf(v, "map/down.ts")).toMatchObject({ status: "ok", message: null, problems: [] });
    expect(v.assets.map((x) => x.key).sort()).toEqual(["dup/key", "map/down", "map/up", "shop/raw_orders", "shop/revenue_7d"]);
  }, 180_000);

  it("check reads the project's database when no server holds it", async () => {
    await dev!.stop();
    dev = undefined;
    await writeFile(path.join(defsDir, "zz/dup.ts"), DUPLICATE);
    const r = await runCli(["check", "--json", "--definitions", defsDir, "--data-dir", dataDir, "--url", "http://127.0.0.1:9"], {
      timeoutMs: 170_000,
    });
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout) as {
      previousLoad: string | null;
      assets: { key: string; file: string }[];
      problems: { code: string; file: string; assetKey: string }[];
    };
    expect(out.previousLoad).toBe(dataDir);
    expect(out.problems.filter((p) => p.assetKey === "shop/raw_orders").map((p) => [p.code, p.file])).toEqual([
      ["GRAPH_DUPLICATE_KEY", "zz/dup.ts"],
    ]);
    expect(out.assets.find((a) => a.key === "shop/raw_orders")?.file).toBe("shop/raw_orders.ts");
  }, 240_000);
});
