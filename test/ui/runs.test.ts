import { expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// The runs list, the run page (Gantt timeline, step details, live and finished logs) in Chromium against a real
// `tributary dev` on Postgres, with steps that log through ctx.log.
const DEFS = `
import { asset, daily } from "tributary";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const hello = asset({ key: "ui/hello" }, async (ctx) => {
  ctx.log.info("hello from the step");
  ctx.log.info("a second line", { rows: 2 });
  return 1;
});
export const slow = asset({ key: "ui/slow" }, async (ctx) => {
  for (let i = 1; i <= 4; i++) { ctx.log.info("tick " + i); await sleep(1_000); }
  return 4;
});
export const flaky = asset({ key: "ui/flaky", retries: { max: 2, delay: "1s" } }, async (ctx) => {
  ctx.log.info("try " + ctx.tryNumber);
  if (ctx.tryNumber === 1) throw new Error("the first try fails");
  return 3;
});
export const many = asset({ key: "ui/many", partitions: daily({ start: "2025-01-01", timezone: "UTC" }) }, async (ctx) => {
  await sleep(1_500);
  return ctx.partition.key;
});
export const broken = asset({ key: "ui/broken" }, async () => {
  throw new Error("this step always fails");
});
// Its first try's worker process is killed from outside (as the kernel's OOM killer or an evicting host would).
export const killed = asset({ key: "ui/killed" }, async (ctx) => {
  if (ctx.tryNumber === 1) process.kill(process.pid, "SIGKILL");
  return "survived";
});
`;

interface RunInfo {
  id: string;
  status: string;
  steps: { id: string; assetKey: string; tries: { tryNumber: number; state: string }[] }[];
}

describeBrowser("UI runs and run page", () => {
  const database = useTestDatabase();

  const gql = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const r = await graphqlAt<T>(ui.dev.port, query, variables);
    if (r.errors) throw new Error(JSON.stringify(r.errors));
    return r.data!;
  };
  const launch = async (key: string): Promise<string> =>
    (await gql<{ launchRun: { id: string } }>(`mutation ($k: String!) { launchRun(input: { assetKeys: [$k] }) { id } }`, { k: key }))
      .launchRun.id;
  const runInfo = async (id: string): Promise<RunInfo> =>
    (
      await gql<{ run: RunInfo }>(`query ($id: String!) { run(id: $id) { id status steps { id assetKey tries { tryNumber state } } } }`, {
        id,
      })
    ).run;
  const ended = (id: string, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const run = await runInfo(id);
        return ["success", "failed", "canceled"].includes(run.status) ? run : undefined;
      },
      timeoutMs,
      `run ${id} to end`,
    );

  const ui = useUi({ files: { "assets.ts": DEFS }, databaseUrl: () => database.url });

  it("filters the runs list by status, and the filter survives a reload", async () => {
    const ok = await launch("ui/hello");
    const bad = await launch("ui/broken");
    expect((await ended(ok)).status).toBe("success");
    expect((await ended(bad)).status).toBe("failed");

    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/runs");
    await page.getByTestId("runs-table").waitFor();
    expect(await page.getByTestId("run-row").count()).toBeGreaterThanOrEqual(2);
    await page.getByTestId("filter-status").selectOption("failed");
    await page.waitForURL(/status=failed/);
    await page.locator(`[data-testid=run-row] >> nth=0`).waitFor();
    await eventually(
      async () => ((await page.locator("[data-testid=run-row][data-status=success]").count()) === 0 ? true : undefined),
      10_000,
      "successful runs to leave",
    );

    await page.reload();
    await page.getByTestId("runs-table").waitFor();
    expect(await page.getByTestId("filter-status").inputValue()).toBe("failed");
    const statuses = await page.getByTestId("run-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-status")));
    const api = await gql<{ runsConnection: { nodes: { id: string }[] } }>(
      `{ runsConnection(filter: { status: failed }) { nodes { id } } }`,
    );
    expect(statuses).toEqual(api.runsConnection.nodes.map(() => "failed"));
    expect(await page.locator(`a[href="/runs/${bad}"]`).count()).toBe(1);
    expect(await page.locator(`a[href="/runs/${ok}"]`).count()).toBe(0);
    await screenshot(page, "runs");

    // The other filters, from a shared link: by asset, and by creation time.
    await page.goto(`/runs?asset=ui/hello`);
    await page.getByTestId("runs-table").waitFor();
    expect(await page.locator(`a[href="/runs/${ok}"]`).count()).toBe(1);
    expect(await page.locator(`a[href="/runs/${bad}"]`).count()).toBe(0);
    expect(await page.getByTestId("filter-asset").inputValue()).toBe("ui/hello");
    await page.goto(`/runs?after=2999-01-01T00:00`);
    await page.getByTestId("runs-empty").waitFor();
    // An unknown asset is the API's error, shown with its code.
    await page.goto(`/runs?asset=ui/nope`);
    expect(await page.getByTestId("error").textContent()).toContain("GRAPH_UNKNOWN_ASSET");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("shows a Gantt row per step and a finished step's log; retries are separate segments of one row", async () => {
    const hello = await launch("ui/hello");
    const flaky = await launch("ui/flaky");
    const helloRun = await ended(hello);
    const flakyRun = await ended(flaky);
    expect(flakyRun.status).toBe("success");
    expect(flakyRun.steps[0]!.tries.map((t) => t.state)).toEqual(["failed", "success"]);

    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto(`/runs/${hello}`);
    await page.getByTestId("gantt").waitFor();
    expect(await page.getByTestId("gantt-row").count()).toBe(helloRun.steps.length);
    const step = helloRun.steps[0]!;
    await page.locator(`[data-testid=gantt-row][data-step-id="${step.id}"]`).click();
    await page.waitForURL(new RegExp(`step=${step.id}`));
    await page.getByTestId("log-ended").waitFor();
    const log = await page.getByTestId("log-lines").textContent();
    expect(log).toContain("hello from the step");
    expect(log).toContain("a second line");
    await screenshot(page, "run");

    // The retried step: one row, a segment per try, and each try's own log.
    await page.goto(`/runs/${flaky}?step=${flakyRun.steps[0]!.id}`);
    const row = page.locator(`[data-testid=gantt-row][data-step-id="${flakyRun.steps[0]!.id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-tries")).toBe("2");
    expect(await row.getByTestId("gantt-try").count()).toBe(2);
    await page.getByTestId("log-ended").waitFor();
    expect(await page.getByTestId("log-lines").textContent()).toContain("try 2");
    await page.getByTestId("try-1").click();
    await page.waitForURL(/try=1/);
    await eventually(
      async () => ((await page.getByTestId("log-lines").textContent())?.includes("try 1") ? true : undefined),
      10_000,
      "try 1's log",
    );
    expect(await page.getByTestId("step-error").first().textContent()).toContain("the first try fails");
    expect(await page.getByTestId("failure-class").first().textContent()).toBe("user failure");
    expect(await page.getByTestId("try-1").getAttribute("data-failure-class")).toBe("user");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("says a try lost to infrastructure was not the user's: the step ran again with no retries and succeeded", async () => {
    const id = await launch("ui/killed");
    const run = await ended(id);
    expect(run.status).toBe("success");
    expect(run.steps[0]!.tries.map((t) => t.state)).toEqual(["failed", "success"]);

    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto(`/runs/${id}?step=${run.steps[0]!.id}`);
    const first = page.getByTestId("try-1");
    await first.waitFor();
    expect(await first.textContent()).toBe("1: failed (infrastructure)");
    expect(await first.getAttribute("data-failure-class")).toBe("infrastructure");
    await first.click();
    await page.waitForURL(/try=1/);
    const error = page.getByTestId("step-error").first();
    await error.waitFor();
    expect(await error.textContent()).toContain("killed by SIGKILL");
    const tag = error.getByTestId("failure-class");
    expect(await tag.textContent()).toBe("infrastructure failure");
    expect(await tag.getAttribute("title")).toContain("does not count against the asset's retries");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("streams a running step's log lines while it runs, then shows how the try ended", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    const id = await launch("ui/slow");
    await page.goto(`/runs/${id}`);
    const row = page.getByTestId("gantt-row").first();
    await row.waitFor();
    await row.click();
    // The first line shows while the run is still running (the page follows the run over SSE, then the log).
    await eventually(
      async () => ((await page.getByTestId("log-lines").textContent())?.includes("tick 1") ? true : undefined),
      30_000,
      "the first log line",
    );
    expect((await runInfo(id)).status).toBe("running");
    expect(await page.getByTestId("run-page").getAttribute("data-status")).toBe("running");
    expect(await page.getByTestId("gantt-now").count()).toBe(1);
    expect(await page.getByTestId("log-view").getAttribute("data-status")).toBe("following");
    // Then the rest, and the end of the try; the page sees the run end without a reload.
    await page.getByTestId("log-ended").waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("log-lines").textContent()).toContain("tick 4");
    await page.locator("[data-testid=run-page][data-status=success]").waitFor({ timeout: 15_000 });
    expect(await page.getByTestId("gantt-now").count()).toBe(0);
    expectNoProblems(problems);
    await page.context().close();
  });

  it("draws hundreds of steps, and cancels an active run from its page", async () => {
    const { launchRun } = await gql<{ launchRun: { id: string; stepsTotal: number } }>(
      `mutation { launchRun(input: { assetKeys: ["ui/many"], from: "2025-01-01", to: "2025-08-31" }) { id stepsTotal } }`,
    );
    expect(launchRun.stepsTotal).toBe(243);
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    page.on("dialog", (d) => void d.accept());
    await page.goto(`/runs/${launchRun.id}`);
    await page.locator("[data-testid=gantt][data-rows='243']").waitFor();
    expect(await page.getByTestId("gantt-row").count()).toBe(243);
    // Some steps run (segments drawn, the now line shows) while the run is active.
    await page.getByTestId("gantt-try").first().waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("gantt-now").count()).toBe(1);
    await page.getByTestId("gantt-sort").selectOption("plan");
    await page.waitForURL(/sort=plan/);
    expect(await page.getByTestId("gantt-label").first().textContent()).toContain("2025-01-01");
    await screenshot(page, "run-gantt");

    await page.getByTestId("cancel-run").click();
    await page.locator("[data-testid=run-page][data-status=canceled]").waitFor({ timeout: 60_000 });
    expect((await runInfo(launchRun.id)).status).toBe("canceled");
    expect(await page.getByTestId("cancel-run").count()).toBe(0);
    expectNoProblems(problems);
    await page.context().close();
  }, 120_000);

  it("shows a not-found page for an unknown run id", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/runs/00000000-0000-4000-8000-000000000000");
    expect(await page.getByTestId("not-found").textContent()).toContain("Run not found");
    await page.goto("/runs/not-a-run-id");
    expect(await page.getByTestId("not-found").textContent()).toContain("not-a-run-id");
    expectNoProblems(problems);
    await page.context().close();
  });
});
