import { afterAll, beforeAll, expect, it } from "vitest";
import { runEventRoutes } from "../../src/api/logs/run-events.js";
import { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { allEvents } from "./sse.js";

// A run's progress over SSE, against a real run (reconciler + executor + Postgres).
const DEFS = `
import { asset, daily } from "tributary";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const slow = asset({ key: "ev/slow", partitions: daily({ start: "2025-03-01" }) }, async () => { await sleep(150); return 1; });
`;

describePostgres("run progress (GET /runs/:runId/events)", () => {
  let h: Harness;
  let app: ReturnType<typeof runEventRoutes>;
  beforeAll(async () => {
    h = await Harness.create({ files: { "ev.ts": DEFS }, node: { capacity: 1 } });
    app = runEventRoutes(h.runs, { pollMs: 50 });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  it("sends the summary each time it changes while the run goes on, then an end event", async () => {
    const runId = await h.launch(["ev/slow"], { from: "2025-03-01", to: "2025-03-05" });
    const res = await app.request(`/runs/${runId}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = await allEvents(res);
    const runs = events.filter((e) => e.event === "run").map((e) => JSON.parse(e.data) as { status: string; stepsDone: number });
    // One step at a time: the client saw it progress, never going back.
    expect(runs.length).toBeGreaterThanOrEqual(3);
    const done = runs.map((r) => r.stepsDone);
    expect(done).toEqual([...done].sort((a, b) => a - b));
    expect(runs.at(-1)).toMatchObject({ status: "success", stepsDone: 5 });
    expect(events.at(-1)).toMatchObject({ event: "end" });
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ status: "success" });
    // A run that has ended: its summary and the end event at once.
    const again = await allEvents(await app.request(`/runs/${runId}/events`));
    expect(again.map((e) => e.event)).toEqual(["run", "end"]);
  });

  it("answers 404 with a code for an unknown or malformed run id", async () => {
    for (const id of ["00000000-0000-0000-0000-000000000000", "x'; drop table runs; --"]) {
      const res = await app.request(`/runs/${encodeURIComponent(id)}/events`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: "RUN_NOT_FOUND" } });
    }
  });
});
