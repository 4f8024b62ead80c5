// The web UI in a real headless Chromium (Debian's, driven by playwright-core) against a real `tributary dev`.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_UI_DIR } from "../../src/api/ui-routes.js";
import { ROOT, startApi, startDev, type DevServer } from "../cli/run-cli.js";
import { isCi } from "../support/env.js";

export { startApi, startDev, type DevServer };

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"];

function missing(): string | undefined {
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  if (!existsSync(path.join(DEFAULT_UI_DIR, "index.html"))) return `the UI is not built (${DEFAULT_UI_DIR}): run npm run build:ui`;
  return undefined;
}

/**
 * Like describe(), for suites that drive the UI in Chromium. Without Chromium or a UI build the suite is skipped
 * with the reason in its name outside CI; under CI=true it fails.
 */
export function describeBrowser(name: string, fn: () => void): void {
  const reason = missing();
  if (reason && isCi()) {
    describe(name, () => {
      it("needs Chromium and the UI build", () => expect.fail(`CI=true: ${reason}`));
    });
    return;
  }
  if (reason) console.warn(`\n*** SKIPPING browser suite "${name}": ${reason} ***\n`);
  describe.skipIf(reason !== undefined)(reason ? `${name} [SKIPPED: ${reason}]` : name, fn);
}

export async function openBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/** A page at 1280×800 (a laptop) that records console errors and uncaught exceptions. */
export async function openPage(browser: Browser, baseUrl: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: baseUrl });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console.error: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  return { page, problems };
}

/**
 * Saves a screenshot: under docs/screenshots/ when SCREENSHOTS=1 (how the README's pictures are made), otherwise
 * in the OS temp directory (the capture still runs, so a page that cannot render fails here too).
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir =
    process.env.SCREENSHOTS === "1"
      ? path.join(ROOT, "docs/screenshots")
      : path.join(process.env.TMPDIR ?? "/tmp", "tributary-screenshots");
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Fails with every console error and uncaught page exception seen so far. */
export function expectNoProblems(problems: readonly string[]): void {
  expect(problems, problems.join("\n")).toEqual([]);
}

export interface UiSession {
  /** Valid from beforeAll to afterAll. */
  readonly dev: DevServer;
  readonly browser: Browser;
}

/**
 * For a browser suite: in beforeAll a temp directory, `tributary dev` and Chromium; in afterAll all three go.
 * The server loads `files` (written to a definitions directory) or, without them, the demo; it runs on Postgres
 * at `databaseUrl()` when given, else on an embedded database in the temp directory: a copy of the migrated one, or
 * with `firstStart` one it creates as a first `npm start` does.
 */
export function useUi(options: { files?: Record<string, string>; databaseUrl?: () => string; firstStart?: boolean } = {}): UiSession {
  let state: { dir: string; dev: DevServer; browser: Browser } | undefined;
  beforeAll(async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "tributary-ui-"));
    let definitionsDir: string | undefined;
    if (options.files) {
      definitionsDir = path.join(dir, "definitions");
      await mkdir(definitionsDir);
      for (const [name, text] of Object.entries(options.files)) await writeFile(path.join(definitionsDir, name), text);
    }
    const [dev, browser] = await Promise.all([
      startDev({
        // With Postgres the data directory holds no database, but still the steps' logs and the demo's files: this
        // suite's, not the checkout's .tributary.
        dataDir: path.join(dir, "data"),
        ...(options.databaseUrl ? { databaseUrl: options.databaseUrl() } : { seed: !options.firstStart }),
        ...(definitionsDir ? { definitionsDir } : {}),
      }),
      openBrowser(),
    ]);
    state = { dir, dev, browser };
  }, 180_000);
  afterAll(async () => {
    if (!state) return;
    const { dir, dev, browser } = state;
    state = undefined;
    await browser.close();
    await dev.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const current = () => {
    if (!state) throw new Error("useUi(): the server and browser exist only from beforeAll to afterAll");
    return state;
  };
  return {
    get dev() {
      return current().dev;
    },
    get browser() {
      return current().browser;
    },
  };
}

/**
 * For a browser suite with access control on: in beforeAll `prepare()` (store the definitions and seed the users of
 * the database at `databaseUrl()`), then `tributary api` over it (with `env()`, e.g. an OIDC provider's settings)
 * and Chromium; in afterAll both go.
 */
export function useSignedInUi(options: {
  databaseUrl: () => string;
  prepare: () => Promise<void>;
  env?: () => NodeJS.ProcessEnv;
}): UiSession {
  let state: { dev: DevServer; browser: Browser } | undefined;
  beforeAll(async () => {
    await options.prepare();
    const [dev, browser] = await Promise.all([
      startApi({ databaseUrl: options.databaseUrl(), ...(options.env ? { env: options.env() } : {}) }),
      openBrowser(),
    ]);
    state = { dev, browser };
  }, 180_000);
  afterAll(async () => {
    if (!state) return;
    const { dev, browser } = state;
    state = undefined;
    await browser.close();
    await dev.stop();
  });
  const current = () => {
    if (!state) throw new Error("useSignedInUi(): the server and browser exist only from beforeAll to afterAll");
    return state;
  };
  return {
    get dev() {
      return current().dev;
    },
    get browser() {
      return current().browser;
    },
  };
}

/** Fills the sign-in form on `page` (which must show it) and submits it. */
export async function submitSignIn(page: Page, name: string, password: string): Promise<void> {
  await page.getByTestId("sign-in-page").waitFor();
  await page.getByTestId("sign-in-username").fill(name);
  await page.getByTestId("sign-in-password").fill(password);
  await page.getByTestId("sign-in-submit").click();
}

/** A new browser context of `ui` at `path`, signed in as `name` with `password`. */
export async function signedIn(ui: UiSession, name: string, password: string, path: string): Promise<{ page: Page; problems: string[] }> {
  const opened = await openPage(ui.browser, ui.dev.url);
  await opened.page.goto(path);
  await submitSignIn(opened.page, name, password);
  await expect.poll(() => opened.page.getByTestId("caller-name").textContent()).toBe(name);
  return opened;
}

/** A GraphQL request sent from the page, with its session cookie, as the UI sends them. */
export function graphqlFrom(
  page: Page,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<{ status: number; body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } }> {
  return page.evaluate(
    async ({ query, variables }) => {
      const res = await fetch("/graphql", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
      return {
        status: res.status,
        body: (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] },
      };
    },
    { query, variables },
  );
}
