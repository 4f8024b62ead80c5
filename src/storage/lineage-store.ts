import type { EventKind } from "./database.js";

/** Which way a lineage walk follows event_inputs: to what a materialisation read, or to what read it. */
export type LineageDirection = "upstream" | "downstream";

/** Event kinds that put data in a partition (or saw it there): where lineage starts and what it links. */
export const LINEAGE_EVENT_KINDS = ["materialization", "external", "observation"] as const satisfies readonly EventKind[];

/** One materialisation (or external report, or observation) reached by a lineage walk. */
export interface LineageEvent {
  readonly eventId: number;
  readonly kind: EventKind;
  readonly assetKey: string;
  /** '' for an unpartitioned asset. */
  readonly partitionKey: string;
  /** Null for events reported from outside a run. */
  readonly runId: string | null;
  readonly stepId: number | null;
  readonly tryNumber: number | null;
  readonly dataVersion: string | null;
  readonly codeVersion: string | null;
  readonly createdAt: Date;
  /** Fewest event_inputs hops from the start event. */
  readonly depth: number;
}

/** A materialisation (eventId) read an upstream partition, and which event of it (null: none was recorded). */
export interface LineageEdge {
  readonly eventId: number;
  readonly upstreamAssetKey: string;
  readonly upstreamPartitionKey: string;
  readonly upstreamEventId: number | null;
}

export interface RunLineageQuery {
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly direction: LineageDirection;
  /** event_inputs hops to follow, at least 1. */
  readonly depth: number;
  /** The most events (and the most edges) to return; more sets `truncated`. */
  readonly limit: number;
}

/** The run-level lineage graph around the latest event of one partition. */
export interface RunLineage {
  /** The latest materialisation, external report or observation of the partition; null when it has none. */
  readonly start: LineageEvent | null;
  /** Every event reached, the start included, by (depth, id). */
  readonly events: readonly LineageEvent[];
  readonly edges: readonly LineageEdge[];
  /** More events or edges than the limit were reached: the lists are cut. */
  readonly truncated: boolean;
}

/** Where a partition's latest output is kept. */
export interface StoredOutputLocation {
  /** A reference into the output store (e.g. file://…, s3://…); null when the value is inline in the database. */
  readonly storageRef: string | null;
  readonly inline: boolean;
  readonly sizeBytes: number;
}

/** One asset partition reached by an erasure walk, with what wrote its current data. */
export interface ImpactedPartition {
  readonly assetKey: string;
  readonly partitionKey: string;
  /** The latest materialisation (or external report) of it; null when the partition has none (a source never reported). */
  readonly eventId: number | null;
  readonly eventKind: EventKind | null;
  readonly runId: string | null;
  readonly runStatus: string | null;
  readonly stepId: number | null;
  readonly tryNumber: number | null;
  readonly dataVersion: string | null;
  readonly materializedAt: Date | null;
  /** The step output the event wrote; null for events without one (external reports, observations, cleaned-up outputs). */
  readonly output: StoredOutputLocation | null;
}

export interface ErasureQuery {
  readonly assetKey: string;
  /** The source partitions ('' for an unpartitioned asset). */
  readonly partitionKeys: readonly string[];
  /** The most derived partitions to return; more sets `truncated`. */
  readonly limit: number;
}

export interface ErasureRows {
  /** The source partitions as asked, in the order asked. */
  readonly sources: readonly ImpactedPartition[];
  /** Every other partition whose latest materialisation read a source or another impacted partition, transitively. */
  readonly impacted: readonly ImpactedPartition[];
  readonly truncated: boolean;
}

/**
 * Read-only queries over run-level lineage (event_inputs): a depth-bounded
 * walk either way from one partition's latest event, and the transitive
 * downstream closure of source partitions for erasure requests. Each is a
 * fixed number of statements whatever the graph's size.
 */
export interface LineageStore {
  runLineage(query: RunLineageQuery): Promise<RunLineage>;
  erasureImpact(query: ErasureQuery): Promise<ErasureRows>;
}
