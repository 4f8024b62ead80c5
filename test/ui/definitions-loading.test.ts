import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { listeningPort, startCli } from "../cli/run-cli.js";
import { seedDataDir } from "../support/data-dir-template.js";
import { describeBrowser, expectNoProblems, openBrowser, openPage } from "./browser.js";

// Right after `tributary dev` starts, its definitions may still be importing: the UI says so rather than
// "No assets are defined yet", and shows the assets once they are loaded.

describeBrowser("the UI while the definitions load", () => {
  let dir = "";
  let gate = "";
  let dev: ReturnType<typeof startCli> | undefined;
  let base = "";
  let browser: Browser;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-ui-loading-"));
    gate = path.join(dir, "gate");
    const defs = path.join(dir, "definitions");
    await mkdir(defs);
    // The import finishes only once the test creates the gate file.
    await writeFile(
      path.join(defs, "slow.ts"),
      `import { existsSync } from "node:fs";
import { asset } from "tributary";
while (!existsSync(${JSON.stringify(gate)})) await new Promise((r) => setTimeout(r, 50));
export const one = asset({ key: "slow/one" }, async () => 1);
export const two = asset({ key: "slow/two", deps: { one } }, async (_ctx, { one }) => one + 1);
`,
    );
    // A migrated embedded database to start from: what the test is about comes after a first start.
    await seedDataDir(path.join(dir, "data"));
    const child = startCli(["dev", "--port", "0", "--definitions", defs, "--data-dir", path.join(dir, "data"), "--processes", "1"]);
    dev = child;
    browser = await openBrowser();
    const port = await listeningPort(child);
    base = `http://127.0.0.1:${port}`;
  }, 360_000);

  afterAll(async () => {
    await browser?.close();
    if (dev && dev.exitCode === null) {
      const exited = new Promise((resolve) => dev!.once("exit", resolve));
      dev.kill("SIGINT");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("says 'loading definitions…' on the catalog and the graph, then shows the assets once loaded", async () => {
    const { page, problems } = await openPage(browser, base);
    await page.goto("/");
    await expect.poll(() => page.getByTestId("definitions-loading").textContent(), { timeout: 60_000 }).toBe("loading definitions…");
    expect(await page.getByText("No assets are defined yet").count()).toBe(0);

    const graph = await openPage(browser, base);
    await graph.page.goto("/graph");
    await expect.poll(() => graph.page.getByTestId("definitions-loading").textContent(), { timeout: 60_000 }).toBe("loading definitions…");

    await writeFile(gate, "");
    // The page asks again by itself: no reload.
    await page.getByTestId("catalog-table").waitFor({ timeout: 300_000 });
    expect(await page.getByTestId("catalog-count").getAttribute("data-count")).toBe("2");
    expect(await page.getByTestId("definitions-loading").count()).toBe(0);
    await expect.poll(() => graph.page.getByTestId("graph-count").textContent(), { timeout: 120_000 }).toBe("2 assets, 1 dependencies");
    expectNoProblems(problems);
    expectNoProblems(graph.problems);
  }, 600_000);
});
