// Values global-setup.ts hands to test files through vitest's provide/inject.

export type PostgresContext = { available: true; adminUrl: string; templateDatabase: string } | { available: false; reason: string };

export type RedisContext = { available: true; url: string } | { available: false; reason: string };

declare module "vitest" {
  export interface ProvidedContext {
    postgres: PostgresContext;
    redis: RedisContext;
  }
}
