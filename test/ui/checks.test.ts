import { expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// Asset checks in Chromium against a real `tributary dev` on Postgres: a run's check steps are named as checks on
// the run page (the failed one with its error, its readers skipped naming it), and the asset page's Checks tab
// lists the checks with their latest result and the history of results.
const DEFS = `
import { asset, check, daily, dep } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-02-01", timezone: "UTC" });
export const orders = asset({ key: "ui/orders", partitions: days }, async (ctx) => ({ rows: ctx.partition.key === "2025-01-02" ? 0 : 5 }));
export const notEmpty = check(
  orders,
  { name: "not_empty", blocking: true, description: "Every day has orders" },
  (_ctx, value) => ({ passed: value.rows > 0, metadata: { rows: value.rows } }),
);
export const plausible = check(orders, { name: "plausible", severity: "warn" }, (_ctx, value) => {
  if (value.rows === 0) throw new Error("no rows to judge");
  return { passed: value.rows < 1000 };
});
export const report = asset({ key: "ui/report", partitions: days, deps: { orders: dep(orders) } }, async (_ctx, { orders }) => orders.rows);
`;

const DAYS = ["2025-01-01", "2025-01-02", "2025-01-03"];
const FAILING = "2025-01-02";

interface RunStep {
  id: string;
  assetKey: string;
  partitionKey: string;
  checkName: string | null;
  state: string;
  skipReason: string | null;
}

describeBrowser("UI asset checks", () => {
  const database = useTestDatabase();
  const ui = useUi({ files: { "assets.ts": DEFS }, databaseUrl: () => database.url });

  const gql = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const r = await graphqlAt<T>(ui.dev.port, query, variables);
    if (r.errors?.length || !r.data) throw new Error(`GraphQL failed: ${JSON.stringify(r.errors)}`);
    return r.data;
  };

  let runId: string;
  let steps: RunStep[];

  it("labels a run's check steps as checks, right after their asset's step, with the failed one's error", async () => {
    const { launchRun } = await gql<{ launchRun: { id: string } }>(
      `mutation { launchRun(input: { assetKeys: ["ui/orders", "ui/report"], from: "${DAYS[0]}", to: "${DAYS.at(-1)}" }) { id } }`,
    );
    runId = launchRun.id;
    const run = await eventually(
      async () => {
        const r = await gql<{ run: { status: string; steps: RunStep[] } }>(
          `query ($id: String!) { run(id: $id) { status steps { id assetKey partitionKey checkName state skipReason } } }`,
          { id: runId },
        );
        return ["success", "failed", "canceled"].includes(r.run.status) ? r.run : undefined;
      },
      90_000,
      "the run to end",
    );
    expect(run.status).toBe("failed");
    steps = run.steps;
    const failedCheck = steps.find((s) => s.checkName === "not_empty" && s.partitionKey === FAILING)!;
    expect(failedCheck.state).toBe("failed");
    const blockedReport = steps.find((s) => s.assetKey === "ui/report" && s.partitionKey === FAILING)!;
    expect(blockedReport.state).toBe("upstream_failed");
    expect(steps.filter((s) => s.checkName !== null)).toHaveLength(2 * DAYS.length);

    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto(`/runs/${runId}`);
    await page.locator(`[data-testid=gantt][data-rows='${steps.length}']`).waitFor();

    // Every check step is labelled with its check; the asset's own steps are not.
    for (const s of steps) {
      const label = page.locator(`[data-testid=gantt-label][data-step-id="${s.id}"]`);
      if (s.checkName) {
        expect(await label.getByTestId("step-check").getAttribute("data-check")).toBe(s.checkName);
        expect(await label.textContent()).toContain(`check ${s.checkName}`);
        expect(await label.getAttribute("title")).toContain(`ui/orders · check ${s.checkName} [${s.partitionKey}]`);
      } else {
        expect(await label.getByTestId("step-check").count()).toBe(0);
      }
    }

    // In both orders, the checks of a partition follow its asset's step.
    for (const sort of ["start", "plan"] as const) {
      if (sort === "plan") {
        await page.getByTestId("gantt-sort").selectOption("plan");
        await page.waitForURL(/sort=plan/);
      }
      const rows = await page
        .getByTestId("gantt-label")
        .evaluateAll((els) => els.map((e) => ({ id: e.getAttribute("data-step-id")!, check: e.getAttribute("data-check") })));
      expect(rows).toHaveLength(steps.length);
      for (const [i, row] of rows.entries()) {
        if (!row.check) continue;
        const step = steps.find((s) => s.id === row.id)!;
        // The rows before it, back to the first non-check row, are checks of the same partition; that row is its asset's.
        let j = i - 1;
        while (j >= 0 && rows[j]!.check) {
          expect(steps.find((s) => s.id === rows[j]!.id)!.partitionKey, sort).toBe(step.partitionKey);
          j--;
        }
        const owner = steps.find((s) => s.id === rows[j]?.id);
        expect(owner && [owner.assetKey, owner.partitionKey, owner.checkName], `${sort}: the row before check ${row.check}`).toEqual([
          "ui/orders",
          step.partitionKey,
          null,
        ]);
      }
    }

    // The failed check's details: named as the check, with the CHECK_FAILED error.
    await page.locator(`[data-testid=gantt-label][data-step-id="${failedCheck.id}"]`).click();
    await page.waitForURL(new RegExp(`step=${failedCheck.id}`));
    const details = page.locator(`[data-testid=step-details][data-step-id="${failedCheck.id}"]`);
    await details.waitFor();
    expect(await details.getAttribute("data-check")).toBe("not_empty");
    expect(await details.getByTestId("step-title").textContent()).toMatch(/ui\/orders\s*check\s*not_empty\s*\[2025-01-02\]/);
    const error = await details.getByTestId("step-error").first().textContent();
    expect(error).toContain("CHECK_FAILED");
    expect(error).toContain('blocking check "not_empty"');
    await screenshot(page, "check-run");

    // The reader of that partition was skipped, naming the check.
    await page.locator(`[data-testid=gantt-label][data-step-id="${blockedReport.id}"]`).click();
    await page.waitForURL(new RegExp(`step=${blockedReport.id}`));
    expect(await page.getByTestId("skip-reason").textContent()).toContain("not_empty");
    expectNoProblems(problems);
    await page.context().close();
  }, 150_000);

  it("lists an asset's checks with the latest result of the chosen partition, and the results newest first", async () => {
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/assets/ui/orders");
    await page.getByTestId("tab-checks").click();
    await page.waitForURL(/tab=checks/);
    const table = page.getByTestId("checks-table");
    await table.waitFor();
    expect(await page.getByTestId("check-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-check")))).toEqual([
      "not_empty",
      "plausible",
    ]);
    const notEmpty = page.locator("[data-testid=check-row][data-check=not_empty]");
    const plausible = page.locator("[data-testid=check-row][data-check=plausible]");
    expect(await notEmpty.textContent()).toMatch(/blocking.*error.*Every day has orders/);
    expect(await plausible.textContent()).toMatch(/non-blocking.*warn/);
    // Without a partition: the latest result of any partition, as the API has it.
    const { asset } = await gql<{ asset: { checks: { name: string; latestResult: { passed: boolean; partitionKey: string } }[] } }>(
      `{ asset(key: "ui/orders") { checks { name latestResult { passed partitionKey } } } }`,
    );
    const latest = asset.checks.find((c) => c.name === "not_empty")!.latestResult;
    expect(await notEmpty.getByTestId("check-result").getAttribute("data-passed")).toBe(String(latest.passed));
    expect(await notEmpty.getByTestId("check-latest").textContent()).toContain(latest.partitionKey);

    // Every result, newest first: the failed one on its partition (with its metadata and run), passed on the others.
    await page.getByTestId("check-results-table").waitFor();
    const rows = () =>
      page.getByTestId("check-result-row").evaluateAll((els) =>
        els.map((e) => ({
          check: e.getAttribute("data-check"),
          partition: e.getAttribute("data-partition"),
          passed: e.getAttribute("data-passed"),
        })),
      );
    const all = await rows();
    expect(all).toHaveLength(2 * DAYS.length);
    for (const day of DAYS) {
      expect(all.filter((r) => r.partition === day && r.check === "not_empty").map((r) => r.passed)).toEqual([String(day !== FAILING)]);
      // The non-blocking check threw on the empty day: a failure, with its error.
      expect(all.filter((r) => r.partition === day && r.check === "plausible").map((r) => r.passed)).toEqual([String(day !== FAILING)]);
    }
    const failedRow = page.locator(`[data-testid=check-result-row][data-check=not_empty][data-partition="${FAILING}"]`);
    expect(await failedRow.getByTestId("check-result-metadata").textContent()).toBe('{"rows":0}');
    const failedStep = steps.find((s) => s.checkName === "not_empty" && s.partitionKey === FAILING)!;
    expect(await failedRow.getByTestId("check-result-run").getAttribute("href")).toBe(`/runs/${runId}?step=${failedStep.id}&try=1`);
    await page.getByTestId("tab-checks").evaluate((e) => e.scrollIntoView());
    await screenshot(page, "check-asset");

    // The chosen partition: the failed check's latest result is that partition's, and only its results are listed.
    await page.goto(`/assets/ui/orders?tab=checks&partition=${FAILING}`);
    await page.getByTestId("check-results-table").waitFor();
    expect(await notEmpty.getByTestId("check-result").getAttribute("data-passed")).toBe("false");
    expect(await plausible.getByTestId("check-result").getAttribute("data-passed")).toBe("false");
    const threw = page.locator(`[data-testid=check-result-row][data-check=plausible][data-partition="${FAILING}"]`);
    expect(await threw.getByTestId("check-result-error").textContent()).toContain("no rows to judge");
    expect(await rows()).toEqual([
      expect.objectContaining({ check: expect.any(String), partition: FAILING }),
      expect.objectContaining({ check: expect.any(String), partition: FAILING }),
    ]);
    // One check's results (the choice is in the URL too).
    await page.getByTestId("check-filter").selectOption("not_empty");
    await page.waitForURL(/check=not_empty/);
    await eventually(async () => ((await rows()).length === 1 ? true : undefined), 10_000, "one result of not_empty");
    expect(await rows()).toEqual([{ check: "not_empty", partition: FAILING, passed: "false" }]);
    await page.getByTestId("tab-checks").evaluate((e) => e.scrollIntoView());
    await screenshot(page, "check-asset-partition");

    // An asset without checks says so.
    await page.goto("/assets/ui/report?tab=checks");
    expect(await page.getByTestId("checks-none").textContent()).toContain("no checks");
    expectNoProblems(problems);
    await page.context().close();
  });

  it("pages through the results, newest first", async () => {
    // 14 more days: 28 more results, 34 in all, so a second page of 9.
    const { launchRun } = await gql<{ launchRun: { id: string } }>(
      `mutation { launchRun(input: { assetKeys: ["ui/orders"], from: "2025-01-04", to: "2025-01-17" }) { id } }`,
    );
    await eventually(
      async () => {
        const r = await gql<{ run: { status: string } }>(`query ($id: String!) { run(id: $id) { status } }`, { id: launchRun.id });
        return ["success", "failed", "canceled"].includes(r.run.status) ? r.run : undefined;
      },
      90_000,
      "the second run to end",
    );
    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/assets/ui/orders?tab=checks");
    await page.getByTestId("check-results-table").waitFor();
    // The API's pages, newest first.
    const apiPage = async (after: string | null) =>
      (
        await gql<{ asset: { checkResults: { endCursor: string | null; hasNextPage: boolean; nodes: { id: string }[] } } }>(
          `query ($after: String) { asset(key: "ui/orders") { checkResults(first: 25, after: $after) { endCursor hasNextPage nodes { id } } } }`,
          { after },
        )
      ).asset.checkResults;
    const first = await apiPage(null);
    const second = await apiPage(first.endCursor);
    expect(first.nodes).toHaveLength(25);
    expect(second.nodes).toHaveLength(2 * (DAYS.length + 14) - 25);
    expect(second.hasNextPage).toBe(false);
    const ids = () => page.getByTestId("check-result-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-result-id")!));
    expect(await ids()).toEqual(first.nodes.map((n) => n.id));
    await page.getByRole("button", { name: "older →" }).click();
    await eventually(async () => ((await ids()).length === second.nodes.length ? true : undefined), 10_000, "the second page");
    expect(await ids()).toEqual(second.nodes.map((n) => n.id));
    expect(await page.getByRole("button", { name: "older →" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "← newer" }).click();
    await eventually(async () => ((await ids()).length === 25 ? true : undefined), 10_000, "the first page again");
    expectNoProblems(problems);
    await page.context().close();
  }, 120_000);
});
