// The BullMQ fleet's dependencies going away: Redis stopped and back empty, the API server killed and restarted,
// a worker killed mid-step. Every run ends `success` with the default `retries: 0`.
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { FAULT_MS, Fleet } from "./fleet.js";

describePostgres("faults: Redis, the API server and the workers", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await Fleet.start();
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  it("Redis stopped and back empty: the lost jobs are handed out again within seconds; local steps never wait for it", async () => {
    await fleet.underFault({
      scenario: "redis stopped, back empty",
      launch: { assetKeys: ["f/fleet"], allPartitions: true },
      underWay: 3,
      progressOf: "f/fleet",
      fault: async () => {
        const started = Date.now();
        await fleet.redis.stop();
        // During the outage, a local step is not held up by the steps stuck in the lost queue.
        const local = await fleet.launch({ assetKeys: ["f/local"], partition: "p00" });
        expect(await fleet.waitForRuns([local])).toBe(1);
        await new Promise((r) => setTimeout(r, Math.max(0, started + FAULT_MS.redisDown - Date.now())));
        await fleet.redis.start();
        return [local];
      },
    });
    expect(fleet.exited()).toEqual([]);
    expect(fleet.output("worker")).toMatch(/redis is unreachable/);
  });

  it("the API server killed and back later: the worker waits for it, its steps finish", async () => {
    await fleet.underFault({
      scenario: "api killed, restarted",
      launch: { assetKeys: ["f/fleet"], allPartitions: true },
      underWay: 3,
      progressOf: "f/fleet",
      fault: async () => {
        await fleet.kill("api");
        await new Promise((r) => setTimeout(r, FAULT_MS.apiDown));
        await fleet.startProc("api");
      },
    });
    expect(fleet.output("worker")).toMatch(/api is unreachable/);
    expect(fleet.output("worker")).toMatch(/api answers again after/);
  });

  it("a worker started before the API waits for it instead of exiting", async () => {
    await fleet.kill("worker");
    await fleet.kill("api");
    const worker = fleet.startProc("worker");
    await fleet.until(async () => /api is unreachable/.test(fleet.output("worker")), "the worker to say the API is away");
    await fleet.startProc("api");
    await worker;
    expect(fleet.output("worker")).toMatch(/api answers again after/);
    const run = await fleet.launch({ assetKeys: ["f/fleet"], partition: "p00" });
    expect(await fleet.waitForRuns([run])).toBe(1);
  });

  it("a worker killed mid-step: its steps are re-run elsewhere without using the user's retries", async () => {
    await fleet.underFault({
      scenario: "worker killed",
      launch: { assetKeys: ["f/fleet"], allPartitions: true },
      underWay: 3,
      progressOf: "f/fleet",
      fault: async () => {
        await fleet.kill("worker");
        await fleet.startProc("worker");
      },
    });
  });
});
