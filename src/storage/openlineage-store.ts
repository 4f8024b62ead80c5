import type { EventCursor } from "./event-stream.js";

/**
 * Where OpenLineage emission stands: every stream entry up to `stream` is
 * sent, but `partial`, of which only the first `sent` OpenLineage events were.
 */
export interface LineageCursor {
  readonly stream: EventCursor;
  readonly partial: LineagePartial | null;
}

/** A stream entry (by its event) delivered in part: it is read again, ahead of the stream, and the rest sent. */
export interface LineagePartial {
  readonly txId: string;
  readonly id: number;
  readonly sent: number;
}

/**
 * A try whose OpenLineage START (and, when `ended`, its end) was sent while its
 * step was still in flight, before the step's outcome reached the cursor.
 */
export interface LineageTryMark {
  readonly stepId: number;
  readonly tryNumber: number;
  readonly ended: boolean;
}

/** One try of a step, as step_tries recorded it. */
export interface LineageTry {
  readonly tryNumber: number;
  readonly state: string;
  readonly startedAt: Date | null;
  readonly endedAt: Date | null;
  readonly errorMessage: string | null;
}

/** A step's outcome from the event stream, with its tries and what it read. */
export interface LineageStepRecord {
  readonly txId: string;
  readonly eventId: number;
  readonly kind: "materialization" | "failure";
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly runId: string;
  readonly stepId: number;
  readonly tryNumber: number;
  readonly createdAt: Date;
  /** The run's job name (null for ad-hoc runs). */
  readonly jobName: string | null;
  /** The run was canceled: its failed steps are aborted, not failed. */
  readonly canceled: boolean;
  readonly errorMessage: string | null;
  /** Tries up to and including the one the event reports, in order. */
  readonly tries: readonly LineageTry[];
  /** Upstream partitions the materialisation read (event_inputs), sorted. */
  readonly inputs: readonly { readonly assetKey: string; readonly partitionKey: string }[];
}

/** An observation of a source partition, or a partition a producer outside Tributary reported writing. */
export interface LineageDatasetRecord {
  readonly txId: string;
  readonly eventId: number;
  readonly kind: "observation" | "external";
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly dataVersion: string | null;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly createdAt: Date;
}

/** An entry of the event stream the emitter reports, in (txId, eventId) order. */
export type LineageEventRecord = LineageStepRecord | LineageDatasetRecord;

/** A stream entry, and the stream cursor once it is sent (with every entry before it in the page). */
export interface LineageStreamEntry {
  readonly record: LineageEventRecord;
  readonly after: EventCursor;
}

export interface LineagePage {
  readonly entries: readonly LineageStreamEntry[];
  /** The stream cursor after the whole page (see readEventStream). */
  readonly end: EventCursor;
}

/**
 * A step still in flight (or one that ended without an outcome event: skipped
 * or removed) with its started tries, for START events before the step ends.
 */
export interface LineageLiveStep {
  readonly stepId: number;
  readonly runId: string;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly jobName: string | null;
  readonly state: string;
  /** The step's current try. */
  readonly tryNumber: number;
  readonly endedAt: Date | null;
  /** Tries that started (every state but `queued`), in order. */
  readonly tries: readonly LineageTry[];
}

export interface LineageLease {
  readonly acquired: boolean;
  readonly cursor: LineageCursor;
  readonly marks: readonly LineageTryMark[];
}

/**
 * The OpenLineage emitter's view of storage: a leased cursor (one emitter at a
 * time) over the event stream, and the tries reported ahead of it.
 */
export interface OpenLineageStore {
  /** Takes or renews the lease (free, ours, or expired); SKIP LOCKED, so a busy row means "not now". */
  acquireLease(owner: string, now: Date, ttlMs: number): Promise<LineageLease>;
  /**
   * Step outcomes, observations and external reports after the cursor (see
   * readEventStream: each committed one once, whatever transaction is still
   * open, a late commit included): the partial entry first when there is one,
   * then up to `limit` entries in all.
   */
  readEvents(after: LineageCursor, limit: number): Promise<LineagePage>;
  /**
   * Up to `limit` steps, in id order, that have a try to report before their
   * outcome: in flight (scheduled … deferred) with a try started or ended that
   * `marks` does not yet cover, or skipped/removed with a marked try (those
   * have no outcome event).
   */
  readLiveSteps(marks: readonly LineageTryMark[], limit: number): Promise<LineageLiveStep[]>;
  /** Moves the cursor, stores the marks and renews the lease; false when `owner` no longer holds it. */
  advance(owner: string, cursor: LineageCursor, marks: readonly LineageTryMark[], now: Date, ttlMs: number): Promise<boolean>;
  releaseLease(owner: string): Promise<void>;
}
