import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import { specHash, type PartitionsSpec } from "../../partitions/index.js";
import { RestError } from "./rest-error.js";

/**
 * An asset job, Airflow's DAG: the assets of one group that share
 * one partitions definition. Source assets are observed, never run, so they
 * are no task of any job.
 */
export interface AssetJob {
  /** The group's name; `<group>.<kind>-<8 hex of the partitions hash>` (`shop.daily-1a2b3c4d`) when the group mixes partitions definitions. */
  readonly dagId: string;
  readonly group: string;
  readonly partitions: PartitionsSpec | null;
  /** The job's assets (its tasks) in dependency order. */
  readonly assets: readonly SnapshotAsset[];
}

const jobsOfGraph = new WeakMap<AssetGraph, readonly AssetJob[]>();

/** Every asset job of the graph, sorted by dag_id; computed once per graph version. */
export function assetJobs(graph: AssetGraph): readonly AssetJob[] {
  let jobs = jobsOfGraph.get(graph);
  if (!jobs) {
    jobs = buildJobs(graph);
    jobsOfGraph.set(graph, jobs);
  }
  return jobs;
}

/** The job named `dagId`; RestError 404 naming it otherwise. */
export function requireJob(graph: AssetGraph, dagId: string): AssetJob {
  const job = assetJobs(graph).find((j) => j.dagId === dagId);
  if (!job)
    throw RestError.notFound(
      "DAG",
      `DAG with dag_id: ${JSON.stringify(dagId)} not found (a DAG is the assets of one group sharing a partitions definition; GET /api/v1/dags lists them)`,
    );
  return job;
}

/** The job's asset named `taskId`; RestError 404 naming the DAG's tasks otherwise. */
export function requireTask(job: AssetJob, taskId: string): SnapshotAsset {
  const asset = job.assets.find((a) => a.key === taskId);
  if (!asset) {
    throw RestError.notFound(
      "Task",
      `task_id ${JSON.stringify(taskId)} is not a task of DAG ${JSON.stringify(job.dagId)}; its tasks are ${job.assets.map((a) => JSON.stringify(a.key)).join(", ")}`,
    );
  }
  return asset;
}

function buildJobs(graph: AssetGraph): AssetJob[] {
  /** group → partitions hash → asset keys */
  const buckets = new Map<string, Map<string, string[]>>();
  for (const key of graph.keys()) {
    const a = graph.require(key);
    if (a.kind === "source") continue;
    const byHash = buckets.get(a.group) ?? new Map<string, string[]>();
    buckets.set(a.group, byHash);
    const hash = specHash(a.partitions);
    byHash.set(hash, [...(byHash.get(hash) ?? []), key]);
  }
  const jobs: AssetJob[] = [];
  for (const [group, byHash] of buckets) {
    for (const [hash, keys] of byHash) {
      const assets = graph.topologicalOrder(keys).map((k) => graph.require(k));
      const partitions = assets[0]!.partitions;
      jobs.push({ dagId: byHash.size === 1 ? group : `${group}.${kindOf(partitions)}-${hash.slice(0, 8)}`, group, partitions, assets });
    }
  }
  return jobs.sort((x, y) => (x.dagId < y.dagId ? -1 : x.dagId > y.dagId ? 1 : 0));
}

/** A readable word for a partitions definition, for dag ids: its cadence, kind, or `unpartitioned`. */
function kindOf(spec: PartitionsSpec | null): string {
  if (spec === null) return "unpartitioned";
  return spec.kind === "time" ? spec.cadence : spec.kind;
}
