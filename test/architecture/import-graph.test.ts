import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The layering of the modules (docs/architecture.md), checked on every import in src/.
const SRC = path.resolve(import.meta.dirname, "../../src");

type Module =
  | "errors"
  | "health"
  | "partitions"
  | "sdk"
  | "graph"
  | "planner"
  | "loader"
  | "storage"
  | "execution"
  | "trigger-checks"
  | "reconciler"
  | "executor"
  | "triggerer"
  | "access"
  | "api"
  | "cli"
  | "testing"
  | "index";

/** Which modules each module may import. No exceptions: a module not listed is not imported, not even for a type. */
const ALLOWED: Record<Module, readonly Module[]> = {
  errors: [],
  // Which dependencies this process reaches, reconnect backoff, waiting for a stop signal.
  health: ["errors"],
  partitions: ["errors"],
  sdk: ["errors", "partitions"],
  graph: ["errors", "partitions", "sdk"],
  planner: ["errors", "partitions", "sdk", "graph"],
  storage: ["errors", "health", "partitions", "sdk", "graph"],
  loader: ["errors", "partitions", "sdk", "graph", "index"],
  // The execution contract, and claims turned into dispatches.
  execution: ["errors", "health", "partitions", "sdk", "graph", "storage"],
  // How triggers are checked: by the triggerer, and by a worker for poke and reschedule waits.
  "trigger-checks": ["errors", "health", "partitions", "sdk", "storage"],
  executor: ["errors", "health", "partitions", "sdk", "graph", "planner", "storage", "loader", "execution", "trigger-checks", "index"],
  reconciler: ["errors", "health", "partitions", "sdk", "graph", "planner", "storage", "execution"],
  // index: the helpers beside the public surface its child process starts with (stack-source-maps.mjs).
  triggerer: ["errors", "health", "partitions", "sdk", "graph", "planner", "storage", "trigger-checks", "index"],
  // Who is calling and what they may do: credentials, roles per team, the one authorisation decision.
  access: ["errors", "storage"],
  api: ["errors", "health", "partitions", "sdk", "graph", "planner", "storage", "execution", "access"],
  cli: [
    "errors",
    "health",
    "partitions",
    "sdk",
    "graph",
    "planner",
    "storage",
    "loader",
    "execution",
    "trigger-checks",
    "reconciler",
    "executor",
    "triggerer",
    "access",
    "api",
  ],
  // Asset functions run in a test's own process: plans as a run does, and runs tries with the executor's runtime.
  testing: ["errors", "partitions", "sdk", "graph", "planner", "execution", "executor"],
  index: ["errors", "partitions", "sdk"],
};
/** Packages a definitions file must never pull in through the SDK: it must load in milliseconds. */
const SDK_FORBIDDEN_PACKAGES = [
  "pg",
  "kysely",
  "bullmq",
  "ioredis",
  "hono",
  "@hono/node-server",
  "graphql",
  "graphql-yoga",
  "@pothos/core",
  "@electric-sql/pglite",
  "@aws-sdk/client-s3",
];

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
      const ok = ALLOWED[from].includes(to);
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
