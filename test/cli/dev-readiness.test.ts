import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, graphqlAt, listeningPort, startCli } from "./run-cli.js";

// `tributary dev` whose definitions take a while to import: it answers at once, but says it is still loading them;
// reopened, it answers with the definitions stored before until the new ones are stored.
let dataDir: string;
let defsDir: string;
let gate: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "tributary-ready-data-"));
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-ready-defs-"));
  // The import finishes only once the test creates the gate file, so the loading phase lasts as long as the test needs.
  gate = path.join(dataDir, "gate");
  await writeFile(
    path.join(defsDir, "slow.ts"),
    `import { existsSync } from "node:fs";
import { asset } from "tributary";
while (!existsSync(${JSON.stringify(gate)})) await new Promise((r) => setTimeout(r, 50));
export const one = asset({ key: "slow/one" }, async () => 1);
`,
  );
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  await rm(defsDir, { recursive: true, force: true });
});

type Status = { definitionsStatus: { state: string; loadedAt: string | null; version: number | null } };
const STATUS = "{ definitionsStatus { state loadedAt version } }";

describe("tributary dev while its definitions load", () => {
  it("answers /readyz 503 and definitionsStatus LOADING until the first load is stored, then 200, LOADED and the assets", async () => {
    const child = startCli(["dev", "--port", "0", "--definitions", defsDir, "--data-dir", dataDir, "--processes", "1"]);
    try {
      // A first start creates the embedded database: minutes on a loaded machine.
      const port = await listeningPort(child);
      const base = `http://127.0.0.1:${port}`;
      const first = await fetch(`${base}/readyz`);
      expect(first.status).toBe(503);
      const body = (await first.json()) as { status: string; problems: { code: string; message: string }[] };
      expect(body.status).toBe("not_ready");
      expect(body.problems.map((p) => p.code)).toEqual(["DEFINITIONS_LOADING"]);
      expect(body.problems[0]!.message).toMatch(/definitions/);

      const loading = await graphqlAt<Status>(port, STATUS);
      expect(loading.errors).toBeUndefined();
      expect(loading.data!.definitionsStatus).toEqual({ state: "LOADING", loadedAt: null, version: null });

      // Asked while loading, the graph answers once it is loaded: never an empty list of assets.
      const earlyAssets = graphqlAt<{ assets: { key: string }[] }>(port, "{ assets { key } }");
      const earlyDags = fetch(`${base}/api/v1/dags`).then(async (r) => (await r.json()) as { dags: { dag_id: string }[] });

      await writeFile(gate, "");
      const ready = await eventually(
        async () => {
          const r = await fetch(`${base}/readyz`);
          return r.status === 200 ? r : undefined;
        },
        300_000,
        "/readyz to answer 200",
      );
      expect(await ready.json()).toMatchObject({ status: "ready", problems: [], dependencies: [{ name: "postgres", up: true }] });
      // Right away, not a moment later: the graph the API answers with is the loaded one.
      const assets = await graphqlAt<{ assets: { key: string }[] }>(port, "{ assets { key } }");
      expect(assets.data!.assets.map((a) => a.key)).toEqual(["slow/one"]);
      const loaded = await graphqlAt<Status>(port, STATUS);
      expect(loaded.data!.definitionsStatus).toMatchObject({ state: "LOADED", version: 1 });
      expect(Date.parse(loaded.data!.definitionsStatus.loadedAt!)).toBeLessThanOrEqual(Date.now());

      expect((await earlyAssets).data!.assets.map((a) => a.key)).toEqual(["slow/one"]);
      expect((await earlyDags).dags).toHaveLength(1);
    } finally {
      child.kill("SIGINT");
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve)));
    }
  }, 660_000);

  it("reopened, answers with the definitions stored before until the new load is stored, then with the new ones", async () => {
    // Runs after the test above, on its data directory: version 1 (slow/one) is stored.
    const gate2 = path.join(dataDir, "gate2");
    await writeFile(
      path.join(defsDir, "slow.ts"),
      `import { existsSync } from "node:fs";
import { asset } from "tributary";
while (!existsSync(${JSON.stringify(gate2)})) await new Promise((r) => setTimeout(r, 50));
export const two = asset({ key: "slow/two" }, async () => 2);
`,
    );
    const child = startCli(["dev", "--port", "0", "--definitions", defsDir, "--data-dir", dataDir, "--processes", "1"]);
    try {
      const port = await listeningPort(child);
      const base = `http://127.0.0.1:${port}`;
      const assets = async () =>
        (await graphqlAt<{ assets: { key: string }[] }>(port, "{ assets { key } }")).data!.assets.map((a) => a.key);

      // The gate is closed: the load cannot have finished, and the stored definitions answer.
      expect(await assets()).toEqual(["slow/one"]);
      const loading = await graphqlAt<Status>(port, STATUS);
      expect(loading.data!.definitionsStatus).toMatchObject({ state: "LOADING", version: 1 });
      expect((await fetch(`${base}/readyz`)).status).toBe(503);

      await writeFile(gate2, "");
      await eventually(async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), 300_000, "/readyz to answer 200");
      expect(await assets()).toEqual(["slow/two"]);
      expect((await graphqlAt<Status>(port, STATUS)).data!.definitionsStatus).toMatchObject({ state: "LOADED", version: 2 });
    } finally {
      child.kill("SIGINT");
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve)));
    }
  }, 660_000);
});
