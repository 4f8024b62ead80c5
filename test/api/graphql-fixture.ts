// Definitions for the GraphQL tests: written to a temporary directory, loaded by the real loader and stored as a snapshot.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Kysely, KyselyPlugin } from "kysely";
import { syncDefinitions } from "../../src/cli/definitions-sync.js";
import { PgDefinitionStore, type Database } from "../../src/storage/index.js";

/**
 * `count` daily-partitioned assets `chain/a000`…: each reads the one before it,
 * and every fifth also reads the first (fan-out), so upstream and downstream lists vary.
 */
export function chainSource(count: number): string {
  const lines = [`import { asset, daily, dep } from "tributary";`, `const days = daily({ start: "2025-01-01", timezone: "UTC" });`];
  for (let i = 0; i < count; i++) {
    const deps = i === 0 ? [] : [`prev: dep(a${pad(i - 1)})`, ...(i % 5 === 0 && i > 1 ? [`root: dep(a000)`] : [])];
    lines.push(
      `export const a${pad(i)} = asset({ key: "chain/a${pad(i)}", partitions: days, group: "g${i % 4}", deps: { ${deps.join(", ")} } }, async () => ${i});`,
    );
  }
  return lines.join("\n") + "\n";
}

const pad = (i: number) => String(i).padStart(3, "0");

/** Loads `source` as the only definitions file and stores the snapshot; returns a function removing the directory. */
export async function storeDefinitions(db: Kysely<Database>, source: string): Promise<() => Promise<void>> {
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-graphql-defs-"));
  await writeFile(path.join(dir, "assets.ts"), source);
  const outcome = await syncDefinitions(new PgDefinitionStore(db), { dir, timeoutMs: 30_000 });
  const failed = outcome.result.files.filter((f) => f.status === "error");
  if (failed.length > 0 || outcome.result.problems.length > 0) {
    throw new Error(`definitions did not load: ${JSON.stringify([failed.map((f) => f.error?.message), outcome.result.problems])}`);
  }
  return () => rm(dir, { recursive: true, force: true });
}

/** `db` with every statement counted: `counted.statements` is how many ran since the last `reset()`. */
export function countingStatements(db: Kysely<Database>): { db: Kysely<Database>; readonly statements: number; reset(): void } {
  let statements = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      statements++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  return {
    db: db.withPlugin(plugin),
    get statements() {
      return statements;
    },
    reset: () => {
      statements = 0;
    },
  };
}
