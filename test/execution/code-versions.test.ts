import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { cacheDir } from "../../src/loader/cache-dir.js";
import { codeRefFile } from "../../src/loader/compile-definitions.js";
import { Harness } from "./harness.js";

// Which code a step runs once its definitions file changed: the worker processes of the local executor are
// long-lived, and a step runs the code of the definitions version its run was planned with.

const versioned = (body: string, extra = "") => `
import { asset } from "tributary";
import { label } from "./helper.ts";
export const a = asset({ key: "cv/a" }, async () => label(${JSON.stringify(body)}));
${extra}`;
const HELPER = (prefix: string) => `export const label = (body) => ${JSON.stringify(prefix)} + body;\n`;
const NEW_ASSET = `export const b = asset({ key: "cv/b" }, async () => "b is new");`;

// Holds the only slot until the test writes the release file.
const BLOCKER = `
import { existsSync } from "node:fs";
import { asset } from "tributary";
export const blocker = asset({ key: "cv/blocker", priority: 10 }, async () => {
  while (!existsSync(process.env.TRIBUTARY_TEST_RELEASE ?? "")) await new Promise((r) => setTimeout(r, 20));
  return "released";
});
`;

describePostgres("execution: the code a step runs after its definitions changed", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    const release = process.env.TRIBUTARY_TEST_RELEASE;
    if (release) await rm(path.dirname(release), { recursive: true, force: true });
    delete process.env.TRIBUTARY_TEST_RELEASE;
  });

  const outputOf = async (runId: string, key: string): Promise<unknown> => {
    const run = (await h!.runs.getRun(runId))!;
    const step = run.steps.find((s) => s.assetKey === key)!;
    expect(step.state, JSON.stringify(step.error)).toBe("success");
    const { rows } = await sql<{ v: unknown }>`select inline_value as v from outputs where step_id = ${step.id}`.execute(h!.db);
    return rows[0]?.v;
  };
  const runOnce = async (key: string): Promise<unknown> => {
    const run = await h!.waitForRun(await h!.launch([key]), 60_000);
    return outputOf(run.id, key);
  };

  it("an edited function body, or an edited file it imports, is a new version that the next run runs", async () => {
    h = await Harness.create({ files: { "v.ts": versioned("one"), "helper.ts": HELPER("") }, executor: "local", outputStore: false });
    const first = (await h.graphs.current({ fresh: true })).version;
    expect(await runOnce("cv/a")).toBe("one");

    const second = await h.redefine({ "v.ts": versioned("two"), "helper.ts": HELPER("") });
    expect(second).toBeGreaterThan(first);
    expect(await runOnce("cv/a")).toBe("two");

    // Only the imported file changed.
    const third = await h.redefine({ "v.ts": versioned("two"), "helper.ts": HELPER("helped ") });
    expect(third).toBeGreaterThan(second);
    expect(await runOnce("cv/a")).toBe("helped two");
  }, 120_000);

  it("a new asset in a file the workers already imported materialises without a restart", async () => {
    h = await Harness.create({ files: { "v.ts": versioned("one"), "helper.ts": HELPER("") }, executor: "local", outputStore: false });
    expect(await runOnce("cv/a")).toBe("one");
    await h.redefine({ "v.ts": versioned("one", NEW_ASSET), "helper.ts": HELPER("") });
    expect(await runOnce("cv/b")).toBe("b is new");
    expect(await runOnce("cv/a")).toBe("one");
  }, 120_000);

  it("a step planned before an edit runs the code of the version it was planned with; a new run runs the new code", async () => {
    const files = { "blocker.ts": BLOCKER, "v.ts": versioned("planned"), "helper.ts": HELPER("") };
    // The worker processes inherit the environment when they start, with the harness.
    const release = path.join(await mkdtemp(path.join(tmpdir(), "tributary-cv-")), "release");
    process.env.TRIBUTARY_TEST_RELEASE = release;
    h = await Harness.create({ files, executor: "local", outputStore: false, node: { capacity: 1 } });
    const planned = await h.launch(["cv/blocker", "cv/a"]);
    await h.until(
      async () => (await h!.runs.getRun(planned))!.steps.find((s) => s.assetKey === "cv/blocker")!.state === "running",
      30_000,
      "cv/blocker to run",
    );

    await h.redefine({ ...files, "v.ts": versioned("edited") });
    await writeFile(release, "");
    const run = await h.waitForRun(planned, 60_000);
    expect(run.status).toBe("success");
    expect(await outputOf(planned, "cv/a")).toBe("planned");
    expect(await runOnce("cv/a")).toBe("edited");
  }, 120_000);

  it("a step whose planned code is gone (the file changed, the build cache cleared) fails saying so", async () => {
    const files = { "blocker.ts": BLOCKER, "v.ts": versioned("planned"), "helper.ts": HELPER("") };
    const release = path.join(await mkdtemp(path.join(tmpdir(), "tributary-cv-")), "release");
    process.env.TRIBUTARY_TEST_RELEASE = release;
    h = await Harness.create({ files, executor: "local", outputStore: false, node: { capacity: 1 } });
    const planned = await h.launch(["cv/blocker", "cv/a"]);
    const codeHash = (await h.graphs.current({ fresh: true })).graph.get("cv/a")!.codeHash!;
    await h.until(
      async () => (await h!.runs.getRun(planned))!.steps.find((s) => s.assetKey === "cv/blocker")!.state === "running",
      30_000,
      "cv/blocker to run",
    );

    await h.redefine({ ...files, "v.ts": versioned("edited") });
    await rm(await codeRefFile(path.join(await cacheDir(), "definitions"), path.join(h.dir, "v.ts"), codeHash));
    await writeFile(release, "");
    const run = await h.waitForRun(planned, 60_000);
    const step = run.steps.find((s) => s.assetKey === "cv/a")!;
    expect(step.state).toBe("failed");
    expect(step.error).toMatchObject({ code: "STEP_CODE_UNAVAILABLE" });
    expect((step.error as { message: string }).message).toMatch(
      /v\.ts it was planned with \(code version [0-9a-f]{12}\) is not available here: .*v\.ts \(or a file it imports\) has other code now.*Launch it again/,
    );
    expect(await runOnce("cv/a")).toBe("edited");
  }, 120_000);
});
