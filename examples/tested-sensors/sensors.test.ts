// Tests of the definitions beside them, in Node's own test runner:
//   node --import tsx --test examples/tested-sensors/*.test.ts
// Files ending in .test.ts are not loaded as definitions.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { materializeInMemory } from "tributary/testing";
import { dailyStats, heatAlerts, readings } from "./sensors.js";

test("a local day reads its hours: 24 on an ordinary day, 23 when the clocks go forward", async () => {
  const result = await materializeInMemory([dailyStats], {
    from: "2025-03-29",
    to: "2025-03-30",
    // sensors/readings is not run here: each hour's value comes from the test.
    upstreams: { "sensors/readings": { celsius: 21 } },
  });
  assert.deepEqual(result.output(dailyStats, "2025-03-29"), { expectedHours: 24, hours: 24, maxCelsius: 21, meanCelsius: 21 });
  assert.equal(result.output(dailyStats, "2025-03-30").hours, 23);
  assert.deepEqual(
    result.checks.map((c) => [c.partitionKey, c.name, c.passed]),
    [
      ["2025-03-29", "complete", true],
      ["2025-03-30", "complete", true],
    ],
  );
});

test("a missing hour fails the blocking check, and that day's alerts wait while the next day's are computed", async () => {
  const result = await materializeInMemory([dailyStats, heatAlerts], {
    partitions: ["2025-07-14", "2025-07-15"],
    // An hour reported without a value reads as null.
    upstreams: { "sensors/readings": (hour: string) => (hour === "2025-07-14-13:00" ? null : { celsius: 31 }) },
    raiseOnError: false,
  });
  assert.equal(result.success, false);
  const failed = result.checks.find((c) => c.partitionKey === "2025-07-14");
  assert.deepEqual([failed?.passed, failed?.metadata], [false, { hours: 23, expectedHours: 24 }]);
  assert.equal(result.step(heatAlerts, "2025-07-14").status, "upstream_failed");
  assert.deepEqual(result.output(heatAlerts, "2025-07-15"), [{ day: "2025-07-15", maxCelsius: 31 }]);
});

// A stand-in for the sensor API, on a free port of this machine.
const seen: { path: string; authorization: string | undefined }[] = [];
let server: Server;
let base: string;

before(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", authorization: req.headers.authorization });
    // 07:00 in Berlin, the step that fails.
    if (decodeURIComponent(req.url ?? "").includes("T05:00")) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ celsius: 18.5 }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

test("an hour is fetched with the URL and token from the secrets, and a failing API fails the step", async () => {
  const secrets = { SENSOR_API_URL: base, SENSOR_API_TOKEN: "t0ken-for-tests" };
  // 03:00 in Berlin on the day summer time starts is 01:00 UTC.
  const result = await materializeInMemory([readings], { partition: "2025-03-30-03:00", secrets });
  assert.deepEqual(result.output(readings, "2025-03-30-03:00"), { celsius: 18.5 });
  assert.deepEqual(seen.at(-1), { path: "/readings/2025-03-30T01%3A00%3A00.000Z", authorization: "Bearer t0ken-for-tests" });

  const failing = await materializeInMemory([readings], { partition: "2025-03-30-07:00", secrets, raiseOnError: false });
  const step = failing.step(readings, "2025-03-30-07:00");
  assert.equal(step.status, "failed");
  assert.match(step.error?.message ?? "", /sensor API answered 503/);
});
