import { randomBytes } from "node:crypto";

/** Databases older than this with a test name are leftovers of killed runs. */
export const STALE_TEST_DATABASE_MS = 2 * 60 * 60 * 1000;

/** `t_<unix seconds>_<random>`: unique, and its age can be read back. */
export function newTestDatabaseName(): string {
  return `t_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString("hex")}`;
}

/** Creation time (ms) encoded in a test or template-build database name. */
export function testDatabaseCreatedAt(name: string): number | undefined {
  const match = /^(?:t|tributary_tpl_[0-9a-f]+_build)_(\d{10})_[0-9a-f]+$/.exec(name);
  return match?.[1] === undefined ? undefined : Number(match[1]) * 1000;
}
