import { createHash } from "node:crypto";
import type { LineageDatasetRecord, LineageEventRecord, LineageLiveStep, LineageStepRecord, LineageTry } from "../../storage/index.js";

/** Who wrote the events (OpenLineage `producer`, and every facet's `_producer`). */
export const OPENLINEAGE_PRODUCER = "https://github.com/tributary/tributary";
export const OPENLINEAGE_SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";
export const OPENLINEAGE_DATASET_EVENT_SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent";
const PARENT_FACET_SCHEMA = "https://openlineage.io/spec/facets/1-0-1/ParentRunFacet.json#/$defs/ParentRunFacet";
const ERROR_FACET_SCHEMA = "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet";
const VERSION_FACET_SCHEMA = "https://openlineage.io/spec/facets/1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet";
const TRIBUTARY_FACET_SCHEMA = `${OPENLINEAGE_PRODUCER}/blob/main/docs/openlineage.md`;

export type LineageEventType = "START" | "COMPLETE" | "FAIL" | "ABORT";

interface Facet {
  readonly _producer: string;
  readonly _schemaURL: string;
  readonly [field: string]: unknown;
}

export interface LineageDataset {
  readonly namespace: string;
  readonly name: string;
  readonly facets: Readonly<Record<string, Facet>>;
}

/** An OpenLineage 2-0-2 RunEvent. */
export interface LineageEvent {
  readonly eventType: LineageEventType;
  readonly eventTime: string;
  readonly run: { readonly runId: string; readonly facets: Readonly<Record<string, Facet>> };
  readonly job: { readonly namespace: string; readonly name: string; readonly facets: Readonly<Record<string, Facet>> };
  readonly inputs: readonly LineageDataset[];
  readonly outputs: readonly LineageDataset[];
  readonly producer: string;
  readonly schemaURL: string;
}

/** An OpenLineage 2-0-2 DatasetEvent: static metadata about a dataset, outside any run. */
export interface LineageDatasetEvent {
  readonly eventTime: string;
  readonly dataset: LineageDataset;
  readonly producer: string;
  readonly schemaURL: string;
}

/** Anything the emitter sends. */
export type OpenLineageEvent = LineageEvent | LineageDatasetEvent;

/** An event to send and, for a try's START or end, which one it is (what delivering it settles). */
export interface PlannedLineageEvent {
  readonly event: OpenLineageEvent;
  readonly try?: { readonly stepId: number; readonly tryNumber: number; readonly phase: "start" | "end" };
}

/** What a try's events are about. */
interface StepInfo {
  readonly runId: string;
  readonly stepId: number;
  readonly assetKey: string;
  readonly partitionKey: string;
  readonly jobName: string | null;
}

interface TryEnd {
  readonly type: LineageEventType;
  readonly time: Date;
  readonly errorMessage: string | null;
  readonly inputs: readonly LineageDataset[];
}

/**
 * The OpenLineage events of one step outcome, in order: for every try a START
 * and its end. A job is an asset (its key), an OpenLineage run is one try of a
 * step (a UUID derived from step id and try number, so the same outcome always
 * yields the same events), whose parent is the Tributary run. Earlier tries end
 * in FAIL; the last one in COMPLETE (materialised), FAIL, or ABORT (its run was
 * canceled). Inputs are the upstream partitions the materialisation read.
 */
export function lineageEvents(record: LineageStepRecord, namespace: string): LineageEvent[] {
  return stepRecordEvents(record, namespace).map((p) => p.event as LineageEvent);
}

/**
 * The events of one entry of the event stream, each tagged with the try it
 * starts or ends: a step outcome's run events (see lineageEvents), or one
 * DatasetEvent for an observation or external report (see datasetEvent).
 */
export function recordEvents(record: LineageEventRecord, namespace: string): PlannedLineageEvent[] {
  return isStepRecord(record) ? stepRecordEvents(record, namespace) : [{ event: datasetEvent(record, namespace) }];
}

export function isStepRecord(record: LineageEventRecord): record is LineageStepRecord {
  return record.kind === "materialization" || record.kind === "failure";
}

function stepRecordEvents(record: LineageStepRecord, namespace: string): PlannedLineageEvent[] {
  const tries: readonly LineageTry[] =
    record.tries.length > 0
      ? record.tries
      : [{ tryNumber: record.tryNumber, state: record.kind, startedAt: null, endedAt: null, errorMessage: record.errorMessage }];
  const inputs = record.inputs.map((i) => dataset(namespace, i.assetKey, i.partitionKey));
  return tries.flatMap((t, index) => {
    const last = index === tries.length - 1;
    const type: LineageEventType = !last ? "FAIL" : record.kind === "materialization" ? "COMPLETE" : record.canceled ? "ABORT" : "FAIL";
    const errorMessage = last ? (record.errorMessage ?? t.errorMessage) : t.errorMessage;
    const time = last ? record.createdAt : (t.endedAt ?? record.createdAt);
    return tryEvents(record, t, { type, time, errorMessage, inputs: last ? inputs : [] }, namespace);
  });
}

/**
 * The events a step still in flight owes before its outcome, given the tries
 * already reported (`marks`: "stepId:tryNumber" → its end was sent too): a
 * START for each started try not yet reported, and the end of each try that is
 * over — FAIL, as in lineageEvents, except the last try of a skipped or
 * removed step, which ends in ABORT (such a step has no outcome event). The
 * try a deferred or rescheduled step waits in is not over yet.
 */
export function liveStepEvents(
  step: LineageLiveStep,
  marks: ReadonlyMap<string, boolean>,
  namespace: string,
  now: Date,
): PlannedLineageEvent[] {
  const out: PlannedLineageEvent[] = [];
  const terminal = step.state === "skipped" || step.state === "removed";
  for (const t of step.tries) {
    const ended = marks.get(tryKey(step.stepId, t.tryNumber));
    if (ended === true) continue;
    const last = t.tryNumber === step.tryNumber;
    // A deferred or rescheduled step's try is waiting, not over: its outcome or the next try ends it.
    const over = terminal || (t.state !== "running" && !(last && (step.state === "deferred" || step.state === "up_for_reschedule")));
    const type: LineageEventType = last && terminal ? "ABORT" : "FAIL";
    const [start, end] = tryEvents(
      step,
      t,
      { type, time: t.endedAt ?? step.endedAt ?? now, errorMessage: t.errorMessage, inputs: [] },
      namespace,
    );
    if (ended === undefined) out.push(start);
    if (over) out.push(end);
  }
  return out;
}

/** The key of a try in the emitter's marks. */
export function tryKey(stepId: number, tryNumber: number): string {
  return `${stepId}:${tryNumber}`;
}

function tryEvents(step: StepInfo, t: LineageTry, end: TryEnd, namespace: string): [PlannedLineageEvent, PlannedLineageEvent] {
  const runId = tryRunId(step.stepId, t.tryNumber);
  const base = {
    job: { namespace, name: step.assetKey, facets: {} },
    inputs: end.inputs,
    outputs: [dataset(namespace, step.assetKey, step.partitionKey)],
    producer: OPENLINEAGE_PRODUCER,
    schemaURL: OPENLINEAGE_SCHEMA_URL,
  };
  const runFacets = { parent: parentFacet(step, namespace), tributary: tributaryFacet(step, t.tryNumber) };
  const endFacets =
    end.type === "COMPLETE" || end.errorMessage === null ? runFacets : { ...runFacets, errorMessage: errorFacet(end.errorMessage) };
  const ref = { stepId: step.stepId, tryNumber: t.tryNumber };
  return [
    {
      event: { ...base, eventType: "START", eventTime: iso(t.startedAt ?? t.endedAt ?? end.time), run: { runId, facets: runFacets } },
      try: { ...ref, phase: "start" },
    },
    { event: { ...base, eventType: end.type, eventTime: iso(end.time), run: { runId, facets: endFacets } }, try: { ...ref, phase: "end" } },
  ];
}

/**
 * An observation of a source partition, or a partition written outside
 * Tributary (`tributary report`): a DatasetEvent for the asset's dataset, with
 * the partition, the data version (`version` facet) and what was reported
 * (`tributary_event` facet: kind, event id, metadata). These happen in no
 * Tributary run, so no RunEvent describes them.
 */
export function datasetEvent(record: LineageDatasetRecord, namespace: string): LineageDatasetEvent {
  const ds = dataset(namespace, record.assetKey, record.partitionKey);
  const facets: Record<string, Facet> = { ...ds.facets };
  if (record.dataVersion !== null) facets["version"] = facet(VERSION_FACET_SCHEMA, { datasetVersion: record.dataVersion });
  facets["tributary_event"] = facet(TRIBUTARY_FACET_SCHEMA, { kind: record.kind, eventId: record.eventId, metadata: record.metadata });
  return {
    eventTime: iso(record.createdAt),
    dataset: { ...ds, facets },
    producer: OPENLINEAGE_PRODUCER,
    schemaURL: OPENLINEAGE_DATASET_EVENT_SCHEMA_URL,
  };
}

/** The OpenLineage run id of a step try: a name-based UUID (version 5 layout) of step id and try number. */
export function tryRunId(stepId: number, tryNumber: number): string {
  const hex = createHash("sha1").update(`tributary-step-try:${stepId}:${tryNumber}`).digest("hex");
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function dataset(namespace: string, assetKey: string, partitionKey: string): LineageDataset {
  const facets: Record<string, Facet> = {};
  if (partitionKey !== "") facets["tributary_partition"] = facet(TRIBUTARY_FACET_SCHEMA, { partitionKey });
  return { namespace, name: assetKey, facets };
}

function parentFacet(step: StepInfo, namespace: string): Facet {
  return facet(PARENT_FACET_SCHEMA, { run: { runId: step.runId }, job: { namespace, name: step.jobName ?? "tributary_run" } });
}

function tributaryFacet(step: StepInfo, tryNumber: number): Facet {
  return facet(TRIBUTARY_FACET_SCHEMA, {
    runId: step.runId,
    stepId: step.stepId,
    tryNumber,
    assetKey: step.assetKey,
    partitionKey: step.partitionKey === "" ? null : step.partitionKey,
  });
}

function errorFacet(message: string): Facet {
  return facet(ERROR_FACET_SCHEMA, { message, programmingLanguage: "JavaScript" });
}

function facet(schemaURL: string, fields: Record<string, unknown>): Facet {
  return { _producer: OPENLINEAGE_PRODUCER, _schemaURL: schemaURL, ...fields };
}

function iso(d: Date): string {
  return d.toISOString();
}
