import assert from "node:assert/strict";
import { test } from "node:test";
import { materializeInMemory } from "tributary/testing";
import { dailyOrders, weeklyRevenue } from "../asset-definitions/shop.js";

// materializeInMemory runs asset functions and their checks in this process: no database, no server.

test("a day's summary adds up its orders", async () => {
  const result = await materializeInMemory([dailyOrders], { partition: "2026-03-10" });
  const day = result.output(dailyOrders, "2026-03-10");
  assert.equal(day.day, "2026-03-10");
  assert.ok(day.orders > 0);
  assert.deepEqual(
    result.checks.map((c) => [c.name, c.passed]),
    [["not_empty", true]],
  );
});

test("a week reads the seven days of its week, given by the test", async () => {
  const result = await materializeInMemory([weeklyRevenue], {
    partition: "2026-03-09",
    upstreams: { "shop/daily_orders": (day: string) => ({ day, orders: 2, revenueCents: 1_000 }) },
  });
  assert.deepEqual(result.output(weeklyRevenue, "2026-03-09"), { days: 7, orders: 14, revenueCents: 7_000 });
});

test("a whole week: its seven days, their checks, then the week", async () => {
  const result = await materializeInMemory([dailyOrders, weeklyRevenue], { from: "2026-03-09", to: "2026-03-15" });
  const days = [...result.outputs(dailyOrders).values()];
  assert.equal(days.length, 7);
  assert.ok(result.checks.every((c) => c.passed));
  const week = result.output(weeklyRevenue, "2026-03-09");
  assert.equal(
    week.revenueCents,
    days.reduce((n, d) => n + d.revenueCents, 0),
  );
});
