import {
  defaultMapping,
  describeMapping,
  describePartitions,
  dynamicNames,
  mappingInWords,
  partitionSpace,
  partitionsInWords,
  upstreamPartitions,
  UNPARTITIONED,
  DIMENSION_SEPARATOR,
  type PartitionContext,
  type PartitionMappingSpec,
  type PartitionsSpec,
  type PartitionSpace,
  type PartitionSubset,
} from "../partitions/index.js";
import { InputError } from "../errors/index.js";
import { conditionInWords, describeCondition, type CheckPartitionsSpec, type DepSpec, type JsonValue } from "../sdk/index.js";
import type { AssetGraph } from "./asset-graph.js";

/** An asset's definition, explained: what `tributary explain` prints, as data. */
export interface AssetExplanation {
  readonly key: string;
  readonly kind: "asset" | "source";
  /** Relative to the definitions directory. */
  readonly file: string;
  readonly exportName: string;
  readonly group: string;
  readonly owner: string | null;
  readonly description: string | null;
  readonly tags: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, JsonValue>>;
  readonly partitions: {
    /** `daily(start 2025-01-01, UTC)`; `unpartitioned`. */
    readonly definition: string;
    readonly words: string;
    readonly spec: PartitionsSpec | null;
  };
  /** The partition the dependencies' `reads` are computed for; null for an unpartitioned asset. */
  readonly examplePartition: string | null;
  /** Why no partition is shown when a partitioned asset has none. */
  readonly examplePartitionNote: string | null;
  readonly dependencies: readonly DependencyExplanation[];
  readonly automation: { readonly condition: string; readonly words: string } | null;
  /** The execution settings it sets (retries, timeout, pool, …), each in words; defaults are left out. */
  readonly settings: readonly { readonly name: string; readonly value: string }[];
  readonly checks: readonly CheckExplanation[];
  /** The assets that read this one, by key. */
  readonly downstream: readonly DownstreamExplanation[];
}

export interface DependencyExplanation {
  /** The name the asset function receives the value under. */
  readonly name: string;
  readonly assetKey: string;
  /** `timeWindow(startOffset -6)`; null when the two definitions have no default mapping. */
  readonly mapping: string | null;
  /** The dependency states no mapping: the default one for the two definitions applies. */
  readonly defaultMapping: boolean;
  readonly mappingWords: string;
  /** What the example partition reads of the upstream asset; null when there is no example partition. */
  readonly reads: PartitionReads | null;
  /** Why `reads` could not be worked out (an upstream that is not defined, a mapping that does not fit). */
  readonly problem: string | null;
}

export interface PartitionReads {
  /** Null: the upstream asset is not partitioned (the whole asset is read). */
  readonly first: string | null;
  readonly last: string | null;
  readonly count: number;
  /** Runs of consecutive partitions among those read. */
  readonly ranges: number;
  /** Partitions the mapping reaches that do not exist (yet), with why. */
  readonly missing: { readonly count: number; readonly reasons: readonly string[] };
  /** Keys of dynamic partition sets the upstream uses, which are only known to the database. */
  readonly unknownDynamicSets: readonly string[];
}

export interface CheckExplanation {
  readonly name: string;
  readonly blocking: boolean;
  readonly severity: "warn" | "error";
  readonly description: string | null;
  /** `every partition`, `partitions eu, us`, `partitions from 2025-01-01`. */
  readonly partitions: string;
}

export interface DownstreamExplanation {
  readonly key: string;
  /** The name it reads this asset under. */
  readonly as: string;
  readonly mapping: string | null;
  readonly defaultMapping: boolean;
  readonly mappingWords: string;
}

export interface ExplainOptions {
  /** Reads are computed as of this instant (which partitions exist). */
  readonly now: Date;
  /** The partition whose reads are shown; default: the latest existing one. */
  readonly partition?: string | undefined;
}

/**
 * Explains an asset of the graph in words: its partitions, what each dependency reads for one partition (with the
 * real partition maths: the mapping applied as the planner applies it), its automation condition, settings, checks
 * and the assets that read it. Pure, and without the database: the keys of dynamic partition sets are not known, so
 * reads from them are left open (an explicit `partition` of a dynamic asset is taken as one of its keys).
 * Throws GraphError GRAPH_UNKNOWN_ASSET (suggesting the nearest key) for a key the graph lacks.
 * @example
 * // given graph: AssetGraph
 * explainAsset(graph, "shop/revenue_7d", { now: new Date(), partition: "2025-03-10" }).dependencies[0]?.reads
 */
export function explainAsset(graph: AssetGraph, key: string, options: ExplainOptions): AssetExplanation {
  const asset = graph.require(key);
  const upstreams = asset.deps.map((d) => d.assetKey);
  const example = examplePartition(asset.partitions, options);
  const ctx = example.ctx;
  return {
    key: asset.key,
    kind: asset.kind,
    file: asset.file,
    exportName: asset.exportName,
    group: asset.group,
    owner: asset.owner,
    description: asset.description,
    tags: asset.tags,
    metadata: asset.metadata,
    partitions: { definition: describePartitions(asset.partitions), words: partitionsInWords(asset.partitions), spec: asset.partitions },
    examplePartition: example.key,
    examplePartitionNote: example.note,
    dependencies: asset.deps.map((dep) => explainDependency(graph, asset.partitions, dep, example, ctx, options.now)),
    automation: asset.automation
      ? {
          condition: describeCondition(asset.automation),
          words: conditionInWords(asset.automation, { partitions: asset.partitions, upstreams: [...new Set(upstreams)] }),
        }
      : null,
    settings: settingsOf(asset),
    checks: graph.checksFor(key).map((c) => ({
      name: c.name,
      blocking: c.blocking,
      severity: c.severity,
      description: c.description,
      partitions: checkPartitions(c.partitions ?? null),
    })),
    downstream: graph.downstreamEdges(key).map((edge) => {
      const down = graph.get(edge.downstreamKey)!;
      const mapping = effectiveMapping(down.partitions, asset.partitions, edge.dep.mapping);
      return {
        key: edge.downstreamKey,
        as: edge.dep.name,
        mapping: mapping.spec ? describeMapping(mapping.spec) : null,
        defaultMapping: edge.dep.mapping === null,
        mappingWords: mapping.words,
      };
    }),
  };
}

interface Example {
  /** Null: unpartitioned, or no partition to show. */
  readonly key: string | null;
  readonly subset: PartitionSubset | null;
  readonly note: string | null;
  readonly ctx: PartitionContext;
}

function examplePartition(spec: PartitionsSpec | null, options: ExplainOptions): Example {
  const noKeys: PartitionContext = { dynamicKeys: () => [] };
  if (spec === null) {
    if (options.partition !== undefined) {
      throw new InputError(`--partition: "${options.partition}": the asset is not partitioned`, {
        code: "INPUT_INVALID",
        location: { field: "--partition" },
      });
    }
    return { key: null, subset: UNPARTITIONED, note: null, ctx: noKeys };
  }
  const dynamic = dynamicNames(spec);
  if (options.partition === undefined) {
    if (dynamic.length > 0) {
      const sets = dynamic.map((n) => `"${n}"`).join(", ");
      return { key: null, subset: null, note: `the keys of dynamic set ${sets} live in the database: pass --partition KEY`, ctx: noKeys };
    }
    const space = partitionSpace(spec, noKeys);
    const count = space.count(options.now);
    if (count === 0) return { key: null, subset: null, note: `no partition exists yet at ${options.now.toISOString()}`, ctx: noKeys };
    const key = space.keyAt(count - 1);
    return { key, subset: space.subset([key]), note: null, ctx: noKeys };
  }
  // Without the database, the given key stands for the dynamic keys it names.
  const ctx = dynamic.length === 0 ? noKeys : contextFor(spec, options.partition);
  const space: PartitionSpace = partitionSpace(spec, ctx);
  return { key: options.partition, subset: space.subset([options.partition]), note: null, ctx };
}

/** A context whose dynamic sets hold the one key (per dimension) the given partition key names. */
function contextFor(spec: PartitionsSpec, key: string): PartitionContext {
  const keys = new Map<string, string[]>();
  if (spec.kind === "dynamic") keys.set(spec.name, [key]);
  if (spec.kind === "multi") {
    const parts = key.split(DIMENSION_SEPARATOR);
    spec.dimensions.forEach((d, i) => {
      if (d.partitions.kind === "dynamic" && parts[i] !== undefined) keys.set(d.partitions.name, [parts[i]]);
    });
  }
  return { dynamicKeys: (name) => keys.get(name) ?? [] };
}

function explainDependency(
  graph: AssetGraph,
  downSpec: PartitionsSpec | null,
  dep: DepSpec,
  example: Example,
  ctx: PartitionContext,
  now: Date,
): DependencyExplanation {
  const up = graph.get(dep.assetKey);
  const base = { name: dep.name, assetKey: dep.assetKey, defaultMapping: dep.mapping === null };
  if (!up) {
    return {
      ...base,
      mapping: dep.mapping ? describeMapping(dep.mapping) : null,
      mappingWords: "",
      reads: null,
      problem: `"${dep.assetKey}" is not in the definitions`,
    };
  }
  const mapping = effectiveMapping(downSpec, up.partitions, dep.mapping);
  const described = { ...base, mapping: mapping.spec ? describeMapping(mapping.spec) : null, mappingWords: mapping.words };
  if (example.subset === null) return { ...described, reads: null, problem: null };
  try {
    const { subset, missing } = upstreamPartitions(downSpec, up.partitions, dep.mapping, example.subset, ctx, now);
    const unknownDynamicSets = up.partitions ? dynamicNames(up.partitions).filter((n) => ctx.dynamicKeys(n).length === 0) : [];
    const missingPart = { count: missing.count, reasons: missing.reasons };
    if (up.partitions === null) {
      return {
        ...described,
        reads: { first: null, last: null, count: 1, ranges: 1, missing: missingPart, unknownDynamicSets },
        problem: null,
      };
    }
    const space = partitionSpace(up.partitions, ctx);
    const first = subset.first();
    const last = subset.last();
    return {
      ...described,
      reads: {
        first: first === undefined ? null : space.keyAt(first),
        last: last === undefined ? null : space.keyAt(last),
        count: subset.count(),
        ranges: subset.rangeCount,
        missing: missingPart,
        unknownDynamicSets,
      },
      problem: null,
    };
  } catch (err) {
    return { ...described, reads: null, problem: (err as Error).message };
  }
}

function effectiveMapping(
  down: PartitionsSpec | null,
  up: PartitionsSpec | null,
  stated: PartitionMappingSpec | null,
): { spec: PartitionMappingSpec | null; words: string } {
  if (stated) return { spec: stated, words: mappingInWords(stated, down, up) };
  const fallback = defaultMapping(down, up);
  return fallback.mapping
    ? { spec: fallback.mapping, words: mappingInWords(fallback.mapping, down, up) }
    : { spec: null, words: fallback.reason };
}

function checkPartitions(p: CheckPartitionsSpec | null): string {
  if (p === null) return "every partition";
  if ("keys" in p) return `partition${p.keys.length === 1 ? "" : "s"} ${p.keys.join(", ")}`;
  if (p.from !== null && p.to !== null) return `partitions ${p.from} to ${p.to}`;
  return p.from !== null ? `partitions from ${p.from}` : `partitions up to ${p.to ?? ""}`;
}

type Asset = ReturnType<AssetGraph["require"]>;

function settingsOf(a: Asset): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  const add = (name: string, value: string | null | false | undefined) => {
    if (value) out.push({ name, value });
  };
  const r = a.retries;
  if (r.max > 0) {
    const spacing = r.backoff === "fixed" ? `${duration(r.delayMs)} apart` : `the first after ${duration(r.delayMs)}, ${r.backoff} backoff`;
    add(
      "retries",
      `${r.max} ${r.max === 1 ? "retry" : "retries"}, ${spacing}${r.maxDelayMs === null ? "" : `, at most ${duration(r.maxDelayMs)} apart`}` +
        (r.jitter ? ", with jitter" : ""),
    );
  }
  add("timeout", a.timeoutMs !== null && duration(a.timeoutMs));
  add("pool", a.pool && `${a.pool}${a.poolSlots === 1 ? "" : ` (${a.poolSlots} slots per step)`}`);
  add("priority", a.priority !== 0 && String(a.priority));
  add("executor", a.executor !== "local" && a.executor);
  add("queue", a.queue);
  add("concurrency", a.maxConcurrency !== null && `at most ${a.maxConcurrency} step${a.maxConcurrency === 1 ? "" : "s"} at once`);
  add("active runs", a.maxActiveRuns !== null && `at most ${a.maxActiveRuns} at once`);
  add("catchup", a.catchup && "every partition due since automation first ran, not only the latest");
  add("trigger rule", a.triggerRule !== "all_success" && a.triggerRule);
  add("code version", a.codeVersion);
  add("deadline", a.deadlineMs !== null && `materialised within ${duration(a.deadlineMs)} of its window closing`);
  add("fan-out", a.fanOut && `${a.fanOut.declared ? "map: one step per item" : "ctx.expand"}, at most ${a.fanOut.maxItems} items`);
  if (a.retention) {
    const kept = [
      a.retention.outputsMs !== undefined && `outputs ${duration(a.retention.outputsMs)}`,
      a.retention.logsMs !== undefined && `logs ${duration(a.retention.logsMs)}`,
      a.retention.historyMs !== undefined && `history ${duration(a.retention.historyMs)}`,
    ].filter(Boolean);
    add("retention", kept.join(", "));
  }
  add("erase", a.erase && `an erase hook (at most ${duration(a.erase.timeoutMs)} a call)`);
  if (a.observe) {
    const args = Object.entries(a.observe.args)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      .join(", ");
    add("observe", `${a.observe.kind}(${args})${a.pollIntervalMs === null ? "" : `, every ${duration(a.pollIntervalMs)}`}`);
    add("observe timeout", a.observeTimeoutMs !== null && duration(a.observeTimeoutMs));
  }
  return out;
}

const UNITS: readonly [string, number][] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
];

/** `10m`, `1h 30m`, `250ms`. */
function duration(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of UNITS) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest > 0 || parts.length === 0) parts.push(`${rest}ms`);
  return parts.join(" ");
}
