import type { AuditEntry } from "./audit-trail.js";
import type { JsonValue } from "./json.js";

/** The kinds of event a producer outside Tributary may report. */
export type ReportedEventKind = "external" | "observation";

/** One reported event: "I wrote (or observed) this partition of this asset". */
export interface ReportedEvent {
  readonly assetKey: string;
  /** '' for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly kind: ReportedEventKind;
  readonly metadata: Readonly<Record<string, JsonValue>>;
  readonly dataVersion?: string | null | undefined;
}

export interface EventRecord {
  readonly id: number;
  readonly kind: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string | null;
  readonly stepId: number | null;
  readonly dataVersion: string | null;
  readonly codeVersion: string | null;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly createdAt: Date;
}

export interface ListEventsOptions {
  readonly assetKey?: string | undefined;
  /**
   * Without it: the newest `limit` events, newest first (for people).
   * With it: events with an id above it, oldest first (paging forward). Ids are
   * assigned before commit, so this is not a cursor for consumers that must not
   * miss late commits: those read in (tx_id, id) order (see events.tx_id).
   */
  readonly afterId?: number | undefined;
  readonly limit: number;
}

/** The asset event stream: external reports and reads. Materialisations are written by the RunStore. */
export interface EventStore {
  /**
   * Appends the events and, in the same transaction, marks each partition
   * `materialized` with the event as its latest materialisation, then wakes the
   * reconciler. Callers validate keys first (see reportAssetEvent). Returns the
   * new event ids in input order.
   */
  reportEvents(events: readonly ReportedEvent[], now: Date, audit?: AuditEntry): Promise<number[]>;
  listEvents(options: ListEventsOptions): Promise<EventRecord[]>;
}
