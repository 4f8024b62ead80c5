import { expect, it } from "vitest";
import { eventually, graphqlAt, runCli } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// Mapped steps end to end against a real `tributary dev` on Postgres: the run's mapped steps through GraphQL, the
// CLI (`tributary run`, `tributary clear --run --map-index`) and the run page in Chromium.
const DEFS = `
import { asset } from "tributary";
export const listing = asset({ key: "ui/listing" }, async () => ({ files: ["a.csv", "b.csv", "c.csv", "d.csv", "e.csv"] }));
export const parsed = asset(
  { key: "ui/parsed", deps: { listing }, map: ({ listing }) => listing.files, mapLabel: (f) => f.toUpperCase() },
  async (ctx) => ({ file: ctx.map.item, rows: ctx.map.index * 10 }),
);
export const rows = asset({ key: "ui/rows", deps: { parsed } }, async (_ctx, { parsed }) => parsed.map((p) => p.rows));
`;

interface RunStep {
  id: string;
  assetKey: string;
  mapIndex: number;
  mapLabel: string | null;
  mapCount: number | null;
  state: string;
  tryNumber: number;
}

describeBrowser("UI, CLI and GraphQL: mapped steps", () => {
  const database = useTestDatabase();
  const ui = useUi({ files: { "assets.ts": DEFS }, databaseUrl: () => database.url });

  const gql = (query: string, variables: Record<string, unknown> = {}) => graphqlAt<Record<string, unknown>>(ui.dev.port, query, variables);
  const readRun = async (id: string) => {
    const r = await gql(
      `query ($id: String!) { run(id: $id) { status planVersion stepsTotal steps { id assetKey mapIndex mapLabel mapCount state tryNumber } } }`,
      { id },
    );
    return (r.data as { run: { status: string; planVersion: number; stepsTotal: number; steps: RunStep[] } }).run;
  };
  const ended = (id: string) =>
    eventually(
      async () => {
        const run = await readRun(id);
        return ["success", "failed", "canceled"].includes(run.status) ? run : undefined;
      },
      90_000,
      "the run to end",
    );

  it("shows each mapped step in the run's state, the CLI and the run page, and clears one inside its run", async () => {
    const launched = await gql(`mutation { launchRun(input: { assetKeys: ["ui/listing", "ui/parsed", "ui/rows"] }) { id } }`);
    const runId = (launched.data as { launchRun: { id: string } }).launchRun.id;
    const run = await ended(runId);
    expect(run.status).toBe("success");
    expect(run.planVersion).toBe(2);
    expect(run.stepsTotal).toBe(8);
    const items = run.steps.filter((s) => s.mapIndex >= 0).sort((a, b) => a.mapIndex - b.mapIndex);
    expect(items.map((s) => [s.mapIndex, s.mapLabel, s.state])).toEqual(
      ["A.CSV", "B.CSV", "C.CSV", "D.CSV", "E.CSV"].map((label, i) => [i, label, "success"]),
    );
    const parent = run.steps.find((s) => s.assetKey === "ui/parsed" && s.mapIndex === -1)!;
    expect(parent.mapCount).toBe(5);

    // The CLI lists the mapped steps under their partition's step.
    const shown = await runCli(["run", runId, "--url", ui.dev.url]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split("\n");
    const at = lines.findIndex((l) => l.includes("fanned out into 5 mapped step(s)"));
    expect(at, shown.stdout).toBeGreaterThan(0);
    expect(lines[at]).toContain("ui/parsed");
    ["A.CSV", "B.CSV", "C.CSV", "D.CSV", "E.CSV"].forEach((label, i) => expect(lines[at + 1 + i]).toContain(`ui/parsed [${i} ${label}]`));

    // Bad targets are refused with the reason, and nothing changes.
    const missing = await gql(`mutation { clearMappedStep(input: { runId: "${runId}", assetKey: "ui/parsed", mapIndex: 9 }) { id } }`);
    expect(missing.errors?.[0]?.extensions?.code).toBe("STEP_NOT_FOUND");
    expect(missing.errors?.[0]?.message).toContain("map indices 0 to 4");
    const negative = await gql(`mutation { clearMappedStep(input: { runId: "${runId}", assetKey: "ui/parsed", mapIndex: -2 }) { id } }`);
    expect(negative.errors?.[0]?.extensions?.code).toBe("INPUT_INVALID");
    expect(negative.errors?.[0]?.message).toContain("mapIndex");
    const usage = await runCli(["clear", "ui/parsed", "--run", runId, "--url", ui.dev.url]);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain("--run and --map-index go together");
    expect((await readRun(runId)).planVersion).toBe(2);

    // One mapped step runs again, inside its run; the partition gathers again and its reader runs again.
    const cleared = await runCli(["clear", "ui/parsed", "--run", runId, "--map-index", "2", "--wait", "--url", ui.dev.url]);
    expect(cleared.code, cleared.stderr + cleared.stdout).toBe(0);
    expect(cleared.stderr).toContain(`cleared mapped step 2 of "ui/parsed" in run ${runId}`);
    const again = await ended(runId);
    expect(again.status).toBe("success");
    expect(again.planVersion).toBe(3);
    expect(
      again.steps
        .filter((s) => s.mapIndex >= 0)
        .sort((a, b) => a.mapIndex - b.mapIndex)
        .map((s) => s.tryNumber),
    ).toEqual([1, 1, 2, 1, 1]);
    expect(again.steps.find((s) => s.assetKey === "ui/rows")!.tryNumber).toBe(2);

    // The run page: the mapped steps follow their partition's step, each with its index and label.
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto(`/runs/${runId}?sort=plan`);
    await page.locator(`[data-testid=gantt][data-rows='${again.steps.length}']`).waitFor();
    const rows = await page.getByTestId("gantt-label").evaluateAll((els) => els.map((e) => e.getAttribute("data-step-id")));
    const parentRow = rows.indexOf(parent.id);
    expect(rows.slice(parentRow + 1, parentRow + 6)).toEqual(items.map((s) => s.id));
    const third = page.locator(`[data-testid=gantt-label][data-step-id="${items[2]!.id}"]`);
    expect(await third.getByTestId("step-map").getAttribute("data-map-index")).toBe("2");
    expect(await third.textContent()).toContain("#2 C.CSV");
    await page.locator(`[data-testid=gantt-label][data-step-id="${parent.id}"]`).click();
    await page.locator(`[data-testid=step-details][data-step-id="${parent.id}"]`).waitFor();
    expect(await page.getByTestId("map-count").textContent()).toBe("5");
    expect(await page.getByTestId("plan-version").textContent()).toBe("3");
    await screenshot(page, "mapped-run");
    expectNoProblems(problems);
    await page.context().close();
  }, 200_000);
});
