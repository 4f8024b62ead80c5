/** Service addresses for tests: the env overrides, else the local services. */
export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

export function testDatabaseUrl(): string {
  return process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
}

export function testRedisUrl(): string {
  return process.env.REDIS_URL || DEFAULT_REDIS_URL;
}

/** In CI a missing service fails the run; locally the suites that need it are skipped, loudly. */
export function isCi(): boolean {
  return process.env.CI === "true";
}
