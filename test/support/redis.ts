import { describe, inject } from "vitest";

/** Like describe(), but skipped with a visible reason when Redis is absent outside CI. */
export function describeRedis(name: string, fn: () => void): void {
  const context = inject("redis");
  // skipIf, not a committed describe.skip: the suite runs whenever Redis is there.
  describe.skipIf(!context.available)(context.available ? name : `${name} [SKIPPED: ${context.reason}]`, fn);
}

/** The Redis URL global-setup checked; throws outside describeRedis when Redis is absent. */
export function testRedisUrlChecked(): string {
  const context = inject("redis");
  if (!context.available) throw new Error(`Redis is unavailable (${context.reason}): wrap this suite in describeRedis()`);
  return context.url;
}
