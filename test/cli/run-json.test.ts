import { afterAll, beforeAll, expect, it } from "vitest";
import { seedTriggers, startApiServer, type ApiServer, type SeededTriggers } from "../api/triggers-seed.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { runCli } from "./run-cli.js";

// `tributary run <id> --json`: every step names its run, in this process and through a server alike.
type RunJson = { run: { id: string; steps: { id: number; runId: string }[] } };

const NO_SERVER = "http://127.0.0.1:9";

describePostgres("tributary run --json", () => {
  const database = useTestDatabase();
  let seeded: SeededTriggers;
  let server: ApiServer;

  async function runJson(url: string): Promise<RunJson> {
    const r = await runCli(["run", seeded.runId, "--json", "--url", url, "--definitions", server.definitionsDir], {
      env: { DATABASE_URL: database.url },
    });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as RunJson;
  }

  beforeAll(async () => {
    seeded = await seedTriggers(database.db);
    server = await startApiServer(database.url);
  }, 90_000);

  afterAll(() => server?.stop());

  it("gives each step its run's id, the same through the server as in this process", async () => {
    const remote = await runJson(server.url);
    expect(remote.run.id).toBe(seeded.runId);
    expect(remote.run.steps.length).toBeGreaterThan(0);
    expect(new Set(remote.run.steps.map((s) => s.runId))).toEqual(new Set([seeded.runId]));
    const local = await runJson(NO_SERVER);
    expect(local.run.steps.map((s) => [s.id, s.runId])).toEqual(remote.run.steps.map((s) => [s.id, s.runId]));
  }, 180_000);
});
