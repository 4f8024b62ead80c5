import { defineConfig } from "vitest/config";

// The pure suites (partitions, planner, …) without the global setup that needs Postgres and Redis.
export default defineConfig({ test: { pool: "forks", include: ["test/**/*.test.ts"], testTimeout: 60_000 } });
