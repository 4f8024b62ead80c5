import { expect, it } from "vitest";
import { eventually, graphqlAt } from "../cli/run-cli.js";
import { useTestDatabase } from "../support/pg.js";
import { describeBrowser, expectNoProblems, openPage, screenshot, useUi } from "./browser.js";

// Erasure requests in Chromium against a real `tributary dev` on Postgres: from the asset page, Erase… previews the
// request (a dry run naming the impacted assets, their partition counts and erase hooks), the confirmed request's
// page follows the reconcilers until it is done, and its proof lists each partition erased and the run that
// replaced it, the deletions and the erase hook's log; the Erasures page lists it.
const DEFS = `
import { asset, staticPartitions } from "tributary";
const customers = staticPartitions(["alice", "bob", "carol"]);
export const profiles = asset({ key: "er/profiles", partitions: customers, metadata: { pii: ["email"] } }, async (ctx) => {
  ctx.log.info("profile of " + ctx.partition.key);
  return { customer: ctx.partition.key, email: ctx.partition.key + "@example.com" };
});
export const scores = asset(
  {
    key: "er/scores",
    partitions: customers,
    deps: { profiles },
    erase: async (ctx, { partitions }) => {
      ctx.log("removed the scores of " + partitions.join(", ") + " from the warehouse");
    },
  },
  async (_ctx, { profiles }) => ({ customer: profiles.customer, score: 7 }),
);
`;

interface Report {
  request: { id: string; state: string; backfillId: string | null; reason: string | null; itemCount: number; erasedCount: number };
  items: {
    assetKey: string;
    partitionKey: string;
    runId: string | null;
    erasedAt: string | null;
    replacement: { runId: string | null } | null;
  }[];
  deletions: { kind: string; assetKey: string; partitionKey: string }[];
  hookCalls: { assetKey: string; state: string; log: string[] }[];
}

const REPORT = `query ($id: ID!) { erasureRequest(id: $id) {
  request { id state backfillId reason itemCount erasedCount }
  items { assetKey partitionKey runId erasedAt replacement { runId } }
  deletions { kind assetKey partitionKey }
  hookCalls { assetKey state log }
} }`;

describeBrowser("UI erasure requests", () => {
  const database = useTestDatabase();
  const ui = useUi({ files: { "assets.ts": DEFS }, databaseUrl: () => database.url });

  const gql = async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const r = await graphqlAt<T>(ui.dev.port, query, variables);
    if (r.errors) throw new Error(JSON.stringify(r.errors));
    return r.data!;
  };

  it("previews an erasure from the asset page, then follows the request to done with its proof", async () => {
    const { launchRun } = await gql<{ launchRun: { id: string } }>(
      `mutation { launchRun(input: { assetKeys: ["er/profiles", "er/scores"], from: "alice", to: "carol" }) { id } }`,
    );
    const first = await eventually(
      async () => {
        const { run } = await gql<{ run: { status: string } }>(`query ($id: String!) { run(id: $id) { status } }`, { id: launchRun.id });
        return run.status === "success" || run.status === "failed" ? run.status : undefined;
      },
      90_000,
      "the first materialisation",
    );
    expect(first).toBe("success");

    const { page, problems } = await openPage(ui.browser, ui.dev.url);
    await page.goto("/assets/er/profiles?from=bob");
    await page.getByTestId("erase").click();
    const form = page.getByTestId("erase-form");
    expect(await form.getByTestId("erase-partitions").inputValue()).toBe("bob");
    // Opening the form previews the selection: a dry run of the same request.
    const preview = form.getByTestId("erase-preview");
    await preview.waitFor({ timeout: 15_000 });
    expect(await preview.getAttribute("data-partitions")).toBe("2");
    expect(await preview.getAttribute("data-assets")).toBe("2");
    expect(await preview.getAttribute("data-hooks")).toBe("1");
    const assetRows = preview.getByTestId("erase-preview-asset");
    expect(await assetRows.evaluateAll((rows) => rows.map((r) => [r.dataset.asset, r.dataset.count, r.dataset.hook]))).toEqual([
      ["er/profiles", "1", "false"],
      ["er/scores", "1", "true"],
    ]);
    expect(await preview.textContent()).toContain("email");
    // The dry run recorded nothing.
    expect((await gql<{ erasureRequests: unknown[] }>(`{ erasureRequests { id } }`)).erasureRequests).toEqual([]);
    await form.getByTestId("erase-reason").fill("customer asked to be forgotten");
    await screenshot(page, "erase-preview");

    await form.getByTestId("erase-confirm").click();
    await page.waitForURL(/\/erasures\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split("/").at(-1)!;
    // The reconcilers erase, call the hook and re-materialise; the page follows without a reload.
    await page.locator("[data-testid=erasure-page][data-state=done]").waitFor({ timeout: 120_000 });

    const { erasureRequest: report } = await gql<{ erasureRequest: Report }>(REPORT, { id });
    expect(report.request).toMatchObject({ state: "done", reason: "customer asked to be forgotten", itemCount: 2, erasedCount: 2 });
    expect(report.items.map((i) => [i.assetKey, i.partitionKey])).toEqual([
      ["er/profiles", "bob"],
      ["er/scores", "bob"],
    ]);
    expect(report.deletions.filter((d) => d.kind === "output").map((d) => d.assetKey)).toEqual(["er/profiles", "er/scores"]);
    expect(report.hookCalls).toEqual([{ assetKey: "er/scores", state: "success", log: ["removed the scores of bob from the warehouse"] }]);

    expect(await page.getByTestId("erasure-reason").textContent()).toBe("customer asked to be forgotten");
    expect(await page.getByTestId("erasure-progress").getAttribute("data-erased")).toBe("2");
    expect(await page.getByTestId("erasure-backfill").getAttribute("href")).toBe(`/backfills/${report.request.backfillId}`);
    // Each partition: erased, and replaced by a new run that the page links to (not the run that held the data).
    const items = page.getByTestId("erasure-item");
    expect(
      await items.evaluateAll((rows) => rows.map((r) => [r.dataset.asset, r.dataset.partition, r.dataset.erased, r.dataset.replacedBy])),
    ).toEqual(report.items.map((i) => [i.assetKey, i.partitionKey, "true", i.replacement!.runId]));
    for (const item of report.items) {
      expect(item.replacement!.runId).not.toBe(launchRun.id);
      expect(await items.locator(`a[href="/runs/${item.replacement!.runId}"]`).count()).toBeGreaterThan(0);
    }
    const deletions = page.getByTestId("erasure-deletion");
    expect(await deletions.count()).toBe(report.deletions.length);
    expect(await deletions.evaluateAll((rows) => rows.map((r) => r.dataset.kind))).toEqual(report.deletions.map((d) => d.kind));
    const hook = page.locator("[data-testid=erasure-hook-call][data-asset='er/scores']");
    expect(await hook.getAttribute("data-state")).toBe("success");
    expect(await hook.getByTestId("erasure-hook-log").textContent()).toBe("removed the scores of bob from the warehouse");
    await screenshot(page, "erasure");

    // The list, one click away (no page load): the request, done, with its source and progress.
    await page.locator("nav a[href='/erasures']").click();
    const row = page.locator(`[data-testid=erasure-row][data-id="${id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-state")).toBe("done");
    expect(await row.textContent()).toContain("er/profiles");
    expect(await row.textContent()).toContain("2/2");
    await screenshot(page, "erasures");
    expectNoProblems(problems);
    await page.context().close();
  }, 240_000);
});
