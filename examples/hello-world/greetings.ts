import { asset, daily } from "tributary";

const days = daily({ start: "2025-01-01" });

/** One greeting per day; the function is told its day and writes only that. */
export const greetings = asset({ key: "hello/greetings", partitions: days }, async (ctx) => {
  const { start } = ctx.partition.window!;
  return { text: `hello on ${start.toISOString().slice(0, 10)}` };
});

/**
 * Reads the same day's greeting (identity mapping: the partitions match). A day reported by an outside producer
 * (`tributary report`) has no stored value: it arrives as null.
 */
export const shout = asset(
  { key: "hello/shout", partitions: days, deps: { greetings } },
  async (_ctx, { greetings }) => greetings?.text.toUpperCase() ?? null,
);
