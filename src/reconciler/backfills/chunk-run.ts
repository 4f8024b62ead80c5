import type { AssetGraph } from "../../graph/index.js";
import { partitionSpace, PartitionSubset, type PartitionContext } from "../../partitions/index.js";
import { plannedRun, planRun, type BackfillChunks, type RunPlan } from "../../planner/index.js";
import type { AssetPartitionRef, BackfillTransaction } from "../../storage/index.js";

/** What became of one chunk. */
export type ChunkOutcome =
  /** Something it needs is being materialised by a run that has not ended: try again when runs end. */
  | { readonly kind: "wait"; readonly reason: string }
  /** Settled without a run: everything was covered or blocked (or the chunk is empty). */
  | { readonly kind: "settled"; readonly covered: number; readonly blocked: ReadonlyMap<string, PartitionSubset> }
  | {
      readonly kind: "run";
      readonly runId: string;
      readonly steps: number;
      readonly covered: number;
      readonly blocked: ReadonlyMap<string, PartitionSubset>;
    }
  /** The plan reads upstream partitions that are not there although nothing of the backfill is missing: counted failed. */
  | { readonly kind: "unplannable"; readonly partitions: ReadonlyMap<string, PartitionSubset>; readonly message: string };

export interface ChunkContext {
  readonly tx: BackfillTransaction;
  readonly graph: AssetGraph;
  readonly version: number;
  readonly chunks: BackfillChunks;
  readonly ctx: PartitionContext | undefined;
  readonly now: Date;
}

/**
 * Creates the run of chunk `k` inside the backfill's transaction, or says why
 * not. In order:
 * 1. A partition of the chunk, or one it reads, that a run which has not ended
 *    is about to materialise makes the chunk wait: two runs never materialise
 *    one partition at once (this backfill's earlier chunks, another backfill
 *    over the same range, a manual run), and a chunk never reads what an
 *    earlier chunk has not finished writing.
 * 2. Partitions of the chunk materialised since the backfill was launched are
 *    covered: another run did what was asked, they are not run again.
 * 3. Partitions reading an upstream partition that is neither planned nor
 *    materialised (an earlier chunk failed) are blocked: counted failed, not run.
 * 4. The rest becomes one run (origin backfill, the backfill's priority),
 *    planned in dependency order by planRun, with the idempotency key
 *    `backfill:<id>:<chunk>` (and a generation suffix after a resume).
 */
export async function chunkRun(c: ChunkContext, k: number, generation: number): Promise<ChunkOutcome> {
  const { tx, graph, chunks } = c;
  const backfill = tx.backfill;
  const chunk = chunks.chunk(k);
  if (chunk.size === 0) return { kind: "settled", covered: 0, blocked: new Map() };
  const reads = chunks.readsOutside(chunk);
  const keyer = new Keyer(graph, c.ctx);
  const own = keyer.refs(chunk);
  const read = keyer.refs(reads);

  const busy = await tx.busyPartitions([...own, ...read]);
  if (busy.length > 0) {
    const ownSet = new Set(own.map(refKey));
    const mine = busy.filter((b) => ownSet.has(refKey(b)));
    const sample = busy
      .slice(0, 3)
      .map((b) => `"${b.assetKey}"${b.partitionKey ? ` ${b.partitionKey}` : ""}`)
      .join(", ");
    const what = mine.length > 0 ? "partitions of it are" : "partitions it reads are";
    return {
      kind: "wait",
      reason: `chunk ${k}: ${busy.length} ${what} being materialised by another run (${sample}${busy.length > 3 ? ", …" : ""})`,
    };
  }

  const materialized = await tx.materializations([...own, ...read]);
  const readIndices = new Map<string, number[]>();
  const coveredIndices = new Map<string, number[]>();
  const ownKeys = new Set(own.map(refKey));
  for (const m of materialized) {
    const index = keyer.index(m.assetKey, m.partitionKey);
    if (index === undefined) continue;
    if (ownKeys.has(refKey(m))) {
      if (m.materializedAt !== null && m.materializedAt.getTime() >= backfill.createdAt.getTime()) push(coveredIndices, m.assetKey, index);
    } else push(readIndices, m.assetKey, index);
  }
  const readSubsets = toSubsets(readIndices);
  const coveredSubsets = toSubsets(coveredIndices);
  const available = (key: string) =>
    (readSubsets.get(key) ?? PartitionSubset.EMPTY).union(coveredSubsets.get(key) ?? PartitionSubset.EMPTY);
  const blocked = chunks.blocked(chunk, available);
  let covered = 0;
  for (const s of coveredSubsets.values()) covered += s.count();

  const planned = new Map<string, PartitionSubset>();
  for (const [key, subset] of chunk) {
    const rest = subset.difference(coveredSubsets.get(key) ?? PartitionSubset.EMPTY).difference(blocked.get(key) ?? PartitionSubset.EMPTY);
    if (!rest.isEmpty()) planned.set(key, rest);
  }
  if (planned.size === 0) return { kind: "settled", covered, blocked };

  const plan: RunPlan = planRun({
    graph,
    version: c.version,
    assets: [...planned.keys()],
    subsets: planned,
    now: c.now,
    dynamicKeys: c.ctx?.dynamicKeys.bind(c.ctx),
    materialized: available,
    includeUpstream: false,
  });
  if (plan.missing.length > 0) {
    return { kind: "unplannable", partitions: planned, message: `chunk ${k}: ${plan.missing.map((m) => m.detail).join("; ")}` };
  }
  const { runId } = await tx.createRun(
    plannedRun(graph, plan, {
      origin: "backfill",
      priority: backfill.priority,
      tags: { ...stringTags(backfill.tags), "tributary/backfill": backfill.id, "tributary/chunk": String(k) },
      idempotencyKey: `backfill:${backfill.id}:${k}${generation > 0 ? `:${generation}` : ""}`,
      backfillId: backfill.id,
    }),
    c.now,
  );
  // Partitions, as the backfill counts them: a check's step is part of its partition's work.
  return { kind: "run", runId, steps: plan.steps.filter((s) => s.check === undefined).length, covered, blocked };
}

/** Partition keys ↔ indices of the assets involved (each space built once). */
export class Keyer {
  private readonly spaces = new Map<string, ReturnType<typeof partitionSpace> | null>();

  constructor(
    private readonly graph: AssetGraph,
    private readonly ctx: PartitionContext | undefined,
  ) {}

  private space(assetKey: string) {
    let space = this.spaces.get(assetKey);
    if (space === undefined) {
      const spec = this.graph.get(assetKey)?.partitions ?? null;
      space = spec === null ? null : partitionSpace(spec, this.ctx);
      this.spaces.set(assetKey, space);
    }
    return space;
  }

  refs(subsets: ReadonlyMap<string, PartitionSubset>): AssetPartitionRef[] {
    const out: AssetPartitionRef[] = [];
    for (const [assetKey, subset] of subsets) {
      const space = this.space(assetKey);
      if (space === null) out.push({ assetKey, partitionKey: "" });
      else for (const partitionKey of space.keys(subset)) out.push({ assetKey, partitionKey });
    }
    return out;
  }

  /** Index of a key, or undefined when it is not (any more) a partition of the asset. */
  index(assetKey: string, partitionKey: string): number | undefined {
    if (!this.graph.has(assetKey)) return undefined;
    const space = this.space(assetKey);
    if (space === null) return partitionKey === "" ? 0 : undefined;
    return space.has(partitionKey) ? space.indexOf(partitionKey) : undefined;
  }
}

export function push(map: Map<string, number[]>, key: string, index: number): void {
  const list = map.get(key);
  if (list) list.push(index);
  else map.set(key, [index]);
}

export function toSubsets(indices: ReadonlyMap<string, readonly number[]>): Map<string, PartitionSubset> {
  return new Map([...indices].map(([key, list]) => [key, PartitionSubset.fromIndices(list)]));
}

function refKey(r: AssetPartitionRef): string {
  return `${r.assetKey}\u0000${r.partitionKey}`;
}

function stringTags(tags: Readonly<Record<string, unknown>>): Record<string, string> {
  return Object.fromEntries(Object.entries(tags).filter((e): e is [string, string] => typeof e[1] === "string"));
}
