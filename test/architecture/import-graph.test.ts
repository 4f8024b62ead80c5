import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The layering of STYLE.md, checked on every import in src/.
const SRC = path.resolve(import.meta.dirname, "../../src");

type Module = "errors" | "partitions" | "sdk" | "graph" | "planner" | "loader" | "reconciler" | "executor" | "triggerer" | "storage" | "api" | "cli" | "index";

/** Which modules each module may import (values only; `import type` of an interface module is listed separately). */
const ALLOWED: Record<Module, readonly Module[]> = {
  errors: [],
  partitions: ["errors"],
  sdk: ["errors", "partitions"],
  graph: ["errors", "partitions", "sdk"],
  planner: ["errors", "partitions", "sdk", "graph"],
  storage: ["errors", "partitions", "sdk", "graph", "planner"],
  loader: ["errors", "partitions", "sdk", "graph", "index"],
  // Poke and reschedule waits run trigger checks inside the worker.
  executor: ["errors", "partitions", "sdk", "graph", "planner", "storage", "loader", "triggerer", "index"],
  reconciler: ["errors", "partitions", "sdk", "graph", "planner", "storage"],
  triggerer: ["errors", "partitions", "sdk", "graph", "planner", "storage"],
  api: ["errors", "partitions", "sdk", "graph", "planner", "storage"],
  cli: ["errors", "partitions", "sdk", "graph", "planner", "storage", "loader", "reconciler", "executor", "triggerer", "api"],
  index: ["errors", "partitions", "sdk"],
};
/** Interfaces a module may name in `import type` without depending on the implementation. */
const TYPE_ONLY: Partial<Record<Module, readonly Module[]>> = {
  reconciler: ["executor"],
};
/** Packages a definitions file must never pull in through the SDK: it must load in milliseconds. */
const SDK_FORBIDDEN_PACKAGES = ["pg", "kysely", "bullmq", "ioredis", "hono", "@hono/node-server", "graphql", "graphql-yoga", "@pothos/core", "@electric-sql/pglite", "@aws-sdk/client-s3"];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.(ts|mts)$/.test(name) ? [p] : [];
  });
}

function moduleOf(file: string): Module {
  const rel = path.relative(SRC, file);
  return (rel.includes(path.sep) ? rel.split(path.sep)[0] : "index") as Module;
}

interface Import {
  file: string;
  specifier: string;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, "utf8");
  const out: Import[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;
  for (const m of text.matchAll(re)) {
    const specifier = m[3] ?? m[4];
    if (specifier) out.push({ file, specifier, typeOnly: Boolean(m[2]) });
  }
  return out;
}

const all = files(SRC).flatMap(importsOf);

describe("the import graph", () => {
  it("follows the layering: every cross-module import is allowed", () => {
    const violations: string[] = [];
    for (const imp of all) {
      if (!imp.specifier.startsWith(".")) continue;
      const from = moduleOf(imp.file);
      const target = path.resolve(path.dirname(imp.file), imp.specifier);
      if (!target.startsWith(SRC)) continue;
      const to = moduleOf(target.replace(/\.js$/, ".ts"));
      if (to === from) continue;
      const ok = ALLOWED[from].includes(to) || (imp.typeOnly && (TYPE_ONLY[from] ?? []).includes(to));
      if (!ok) violations.push(`${path.relative(SRC, imp.file)} imports ${to} (${imp.specifier})`);
    }
    expect(violations).toEqual([]);
  });

  it("crosses a module boundary only through the module's index.ts", () => {
    const violations: string[] = [];
    for (const imp of all) {
      if (!imp.specifier.startsWith(".")) continue;
      const from = moduleOf(imp.file);
      const target = path.resolve(path.dirname(imp.file), imp.specifier);
      const to = moduleOf(target.replace(/\.js$/, ".ts"));
      if (to === from || to === "index") continue;
      if (path.basename(target).replace(/\.(js|ts)$/, "") !== "index") {
        violations.push(`${path.relative(SRC, imp.file)} reaches into ${path.relative(SRC, target)}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("keeps the SDK free of storage, servers and queues", () => {
    const sdkSide = all.filter((i) => ["sdk", "partitions", "errors", "index"].includes(moduleOf(i.file)));
    const bad = sdkSide.filter((i) => SDK_FORBIDDEN_PACKAGES.some((p) => i.specifier === p || i.specifier.startsWith(`${p}/`)));
    expect(bad.map((i) => `${path.relative(SRC, i.file)} imports ${i.specifier}`)).toEqual([]);
  });
});
