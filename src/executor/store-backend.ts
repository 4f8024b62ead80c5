import { serializeError, StorageError, TributaryError } from "../errors/index.js";
import type { AssetGraph, SnapshotAsset } from "../graph/index.js";
import { loadPartitionContext } from "../partitions/index.js";
import { stepReads, type StepRead } from "../planner/index.js";
import {
  INLINE_OUTPUT_LIMIT_BYTES,
  type DefinitionStore,
  type GraphCache,
  type GatheredItem,
  type LineageInput,
  type OutputStore,
  type RunStore,
  type StepCompletion,
} from "../storage/index.js";
import { DEFAULT_MAX_MAP_ITEMS } from "../sdk/index.js";
import { dataVersionOf, type VersionedInput } from "./data-version.js";
import { STEP_ERROR_CODES } from "./step-errors.js";
import type { CheckOutput } from "./step-runtime.js";
import {
  dispatchClaims,
  type DispatchDirs,
  type ExecutionBackend,
  type InputsRequest,
  type StepDispatch,
  type StepInputs,
  type StepResult,
  type StepStarted,
} from "../execution/index.js";

export interface StoreBackendOptions {
  readonly runs: RunStore;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions" | "addDynamicPartitions">;
  readonly graphs: GraphCache;
  /** Where outputs over the inline limit go; without one such outputs fail the try with a clear error. */
  readonly outputStore: OutputStore | null;
  readonly inlineLimitBytes?: number;
  readonly clock?: () => Date;
  /** Called with every completion summary (tests and metrics observe progress through it). */
  readonly onCompleted?: (results: readonly StepResult[]) => void;
  /**
   * The mini-scheduler fast path: when an executor reports results with free
   * slots, the same transaction claims the steps they made runnable for it,
   * and they are dispatched as the reconciler dispatches its claims.
   */
  readonly followUp?: {
    readonly executor: string;
    readonly dirs: DispatchDirs;
    /** The reconciler in whose process the executor runs: the steps claimed are held by it until they start. */
    readonly holder?: string;
  };
}

/** Tries of one batch's input reads before its steps fail (backoff 200, 400, 800… ms between them). */
const LOAD_INPUTS_ATTEMPTS = 5;

/** The name of the setting to mention when an output is too large and no store is configured. */
export const OUTPUT_STORE_SETTING = "TRIBUTARY_OUTPUT_DIR";

/**
 * The ExecutionBackend of executors that run next to the metadata database
 * (the local executor): inputs from stored outputs, results into the run
 * store, large outputs into the object store.
 */
export class StoreExecutionBackend implements ExecutionBackend {
  private readonly clock: () => Date;
  /** Each try in flight: its asset and partition window, what it read (lineage) and those inputs' data versions, from loadInputs to finished. */
  private readonly inFlight = new Map<string, InFlight>();

  constructor(private readonly options: StoreBackendOptions) {
    this.clock = options.clock ?? (() => new Date());
  }

  async loadInputs(steps: readonly InputsRequest[]): Promise<ReadonlyMap<number, StepInputs>> {
    // The reads are idempotent: a dropped connection or a restarting server
    // is retried here rather than failing every step of the batch (which
    // would count against their retry policies, or fail them outright).
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.loadInputsOnce(steps);
      } catch (err) {
        if (attempt >= LOAD_INPUTS_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }

  private async loadInputsOnce(steps: readonly InputsRequest[]): Promise<ReadonlyMap<number, StepInputs>> {
    const out = new Map<number, StepInputs>();
    if (steps.length === 0) return out;
    for (const step of steps) {
      this.inFlight.set(tryKey(step.stepId, step.tryNumber), {
        assetKey: step.assetKey,
        window: step.partition.window,
        lineage: [],
        versions: [],
      });
    }
    let { graph } = await this.options.graphs.current();
    // A step planned with definitions stored after this process last looked (another process loads them) names an
    // asset the cached graph lacks: look again before calling it unknown.
    if (steps.some((step) => !graph.get(step.assetKey))) ({ graph } = await this.options.graphs.current({ fresh: true }));
    const involved = steps.flatMap((step) => {
      const asset = graph.get(step.assetKey);
      return asset ? [asset.partitions, ...asset.deps.map((d) => graph.get(d.assetKey)?.partitions ?? null)] : [];
    });
    const ctx = await loadPartitionContext(involved, (name) => this.options.definitions.listDynamicPartitions(name));
    const now = this.clock();
    // 1. Which upstream partitions each step reads, per dependency, in partition order.
    const wanted = new Map<number, { asset: SnapshotAsset; reads: readonly StepRead[] }>();
    const needed = new Map<string, { assetKey: string; partitionKey: string }>();
    for (const step of steps) {
      try {
        const asset = graph.require(step.assetKey);
        if (step.check) {
          // A check reads the partition of its own asset: its latest materialisation (this run's, when the run
          // materialised it; otherwise the one before, for a check run alone).
          needed.set(`${step.assetKey}\u0000${step.partitionKey}`, { assetKey: step.assetKey, partitionKey: step.partitionKey });
          wanted.set(step.stepId, { asset, reads: [{ name: "value", many: false, assetKey: step.assetKey, keys: [step.partitionKey] }] });
          continue;
        }
        const reads = stepReads(graph, asset, step.partitionKey, ctx, now);
        for (const read of reads)
          for (const k of read.keys) needed.set(`${read.assetKey}\u0000${k}`, { assetKey: read.assetKey, partitionKey: k });
        wanted.set(step.stepId, { asset, reads });
      } catch (err) {
        // The step's asset or one it reads is not in the definitions (or cannot map its partitions).
        out.set(step.stepId, { ok: false, error: serializeError(err), failureClass: "user" });
      }
    }
    // 2. One query for every upstream partition of the batch.
    const records = await this.options.runs.latestOutputs([...needed.values()]);
    const byKey = new Map(records.map((r) => [`${r.assetKey}\u0000${r.partitionKey}`, r]));
    const valueCache = new Map<string, unknown>();
    for (const step of steps) {
      const w = wanted.get(step.stepId);
      if (!w) continue;
      try {
        const inputs: Record<string, unknown> = {};
        const lineage: LineageInput[] = [];
        const versions: VersionedInput[] = [];
        // Under any rule but all_success a step may run although an upstream
        // failed or was skipped: that upstream's value is then absent (null).
        const mayLackInputs = !step.check && w.asset.triggerRule !== "all_success";
        for (const read of w.reads) {
          const values: unknown[] = [];
          for (const key of read.keys) {
            const rec = byKey.get(`${read.assetKey}\u0000${key}`);
            if (!rec) {
              if (read.many || mayLackInputs) continue;
              throw new TributaryError(
                "UPSTREAM_NOT_MATERIALIZED",
                `asset "${step.assetKey}" partition "${step.partitionKey}": its input "${read.name}" reads ` +
                  `"${read.assetKey}"${key ? ` partition "${key}"` : ""}, which has not been materialised; ` +
                  `materialise it first or launch the run with --include-upstream`,
                { location: { assetKey: step.assetKey, partitionKey: step.partitionKey, field: `deps.${read.name}` } },
              );
            }
            lineage.push({ assetKey: read.assetKey, partitionKey: key, eventId: rec.eventId });
            versions.push({ assetKey: read.assetKey, partitionKey: key, dataVersion: rec.dataVersion, eventId: rec.eventId });
            values.push(await this.valueOf(rec, valueCache));
          }
          inputs[read.name] = read.many ? values : (values[0] ?? null);
        }
        this.inFlight.set(tryKey(step.stepId, step.tryNumber), {
          assetKey: step.assetKey,
          window: step.partition.window,
          lineage,
          versions,
          ...(step.check ? { check: step.check } : {}),
        });
        out.set(step.stepId, { ok: true, inputs });
      } catch (err) {
        // An upstream never materialised is the run's own doing; an output store that cannot give an input back is not.
        if (err instanceof OutputStoreFailure)
          out.set(step.stepId, { ok: false, error: serializeError(err.error), failureClass: "infrastructure" });
        else out.set(step.stepId, { ok: false, error: serializeError(err), failureClass: "user" });
      }
    }
    return out;
  }

  async started(events: readonly StepStarted[]): Promise<void> {
    await this.options.runs.markStarted(events, this.clock());
  }

  async heartbeat(steps: readonly { readonly stepId: number; readonly tryNumber: number }[]): Promise<void> {
    await this.options.runs.heartbeat(steps, this.clock());
  }

  async finished(results: readonly StepResult[], options?: { readonly freeSlots: number }): Promise<StepDispatch[]> {
    const { graph } = await this.options.graphs.current();
    const completions = await Promise.all(results.map((r) => this.toCompletion(r, graph)));
    const followUp = this.options.followUp;
    const limit = followUp ? (options?.freeSlots ?? 0) : 0;
    const summary = await this.options.runs.completeSteps(
      completions,
      this.clock(),
      Math.random,
      followUp && limit > 0 ? { executor: followUp.executor, limit, ...(followUp.holder ? { holder: followUp.holder } : {}) } : undefined,
    );
    for (const r of results) this.inFlight.delete(tryKey(r.stepId, r.tryNumber));
    this.options.onCompleted?.(results);
    if (!followUp || summary.claimed.length === 0) return [];
    const { byExecutor, unrunnable } = await dispatchClaims(summary.claimed, {
      graphs: this.options.graphs,
      dirs: followUp.dirs,
      now: this.clock(),
      workerId: null,
    });
    if (unrunnable.length > 0) await this.options.runs.completeSteps(unrunnable, this.clock());
    // The store claimed them for this executor (followUp.executor) only.
    return [...byExecutor.values()].flat();
  }

  /**
   * The completion `finished` would record for this result (an output over the inline limit is put in the
   * object store first), without recording it: the transactional executor records it in the step's own
   * transaction. Forgets the try's inputs, as `finished` does.
   */
  async completionOf(result: StepResult): Promise<StepCompletion> {
    const { graph } = await this.options.graphs.current();
    try {
      return await this.toCompletion(result, graph);
    } finally {
      this.inFlight.delete(tryKey(result.stepId, result.tryNumber));
    }
  }

  async addDynamicPartitions(name: string, keys: readonly string[]): Promise<void> {
    await this.options.definitions.addDynamicPartitions(name, keys);
  }

  async materialized(assetKey: string, partitionKey: string): Promise<{ eventId: number } | undefined> {
    const [latest] = await this.options.runs.latestOutputs([{ assetKey, partitionKey }]);
    return latest?.eventId != null ? { eventId: latest.eventId } : undefined;
  }

  private async toCompletion(r: StepResult, graph: AssetGraph): Promise<StepCompletion> {
    const base = {
      stepId: r.stepId,
      tryNumber: r.tryNumber,
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      workerId: r.workerId,
      logRef: r.logRef,
      hostname: r.hostname ?? null,
      pid: r.pid ?? null,
    };
    const o = r.outcome;
    if (o.kind === "failed") {
      // Dropped unstarted because the executor was closing: not the step's doing, so it is handed out again.
      if (r.startedAt === null && o.error.code === STEP_ERROR_CODES.closed) return { ...base, outcome: "released", error: o.error };
      return { ...base, outcome: "failed", error: o.error, retryable: o.retryable, failureClass: o.failureClass };
    }
    if (o.kind === "skipped") return { ...base, outcome: "skipped", reason: o.reason };
    const flight = this.inFlight.get(tryKey(r.stepId, r.tryNumber));
    if (flight?.check) {
      if (o.kind !== "success") {
        return {
          ...base,
          outcome: "failed",
          retryable: false,
          failureClass: "user",
          error: serializeError(
            new TributaryError(
              "CHECK_RESULT_INVALID",
              `a check's step cannot ${o.kind === "deferred" ? "defer" : "wait"}: checks run to a verdict in one try`,
            ),
          ),
        };
      }
      const verdict = JSON.parse(o.outputJson) as CheckOutput;
      return {
        ...base,
        outcome: "check",
        check: flight.check,
        passed: verdict.passed,
        metadata: verdict.metadata,
        error: verdict.error,
        eventId: flight.lineage[0]?.eventId ?? null,
      };
    }
    if (o.kind === "rescheduled") {
      return { ...base, outcome: "rescheduled", nextCheckAt: new Date(o.nextCheckAt), waitStartedAt: new Date(o.waitStartedAt) };
    }
    if (o.kind === "deferred") {
      const { timeoutMs, ...trigger } = o.trigger;
      return {
        ...base,
        outcome: "deferred",
        trigger: { ...trigger, timeoutAt: new Date(r.endedAt.getTime() + timeoutMs), partitionWindow: flight?.window ?? null },
      };
    }
    const asset = flight ? graph.get(flight.assetKey) : undefined;
    // Two dependencies may read the same upstream partition: it is one input.
    const inputs = new Map((flight?.versions ?? []).map((v) => [`${v.assetKey}\u0000${v.partitionKey}`, v]));
    if (o.kind === "expanded") {
      const max = asset?.fanOut?.maxItems ?? DEFAULT_MAX_MAP_ITEMS;
      if (o.count > max) {
        const error = new TributaryError(
          "MAP_TOO_MANY_ITEMS",
          `asset "${flight?.assetKey ?? "?"}": the fan-out has ${o.count} items, over its limit of ${max}`,
        );
        return { ...base, outcome: "failed", retryable: false, failureClass: "user", error: serializeError(error) };
      }
      // No item: nothing to map, and downstream reads an empty array, materialised here like any output.
      if (o.count > 0) {
        return {
          ...base,
          outcome: "expanded",
          itemsJson: o.itemsJson,
          labels: o.labels,
          count: o.count,
          codeVersion: asset?.codeVersion ?? null,
          inputs: flight?.lineage ?? [],
        };
      }
    }
    const outputJson = o.kind === "expanded" ? "[]" : o.outputJson;
    const sizeBytes = o.kind === "expanded" ? 2 : o.sizeBytes;
    const limit = this.options.inlineLimitBytes ?? INLINE_OUTPUT_LIMIT_BYTES;
    const dataVersion = dataVersionOf(asset?.codeVersion ?? null, [...inputs.values()], outputJson);
    let output: { inline: string; sizeBytes: number } | { ref: string; sizeBytes: number };
    if (sizeBytes <= limit) {
      output = { inline: outputJson, sizeBytes };
    } else if (!this.options.outputStore) {
      return {
        ...base,
        outcome: "failed",
        retryable: false,
        // What the function returned: it fails the same way on every try until the asset returns less.
        failureClass: "user",
        error: serializeError(
          new StorageError(
            "OUTPUT_TOO_LARGE",
            `the output is ${formatBytes(sizeBytes)}, over the ${formatBytes(limit)} that the metadata database holds, ` +
              `and no large-output store is configured: set ${OUTPUT_STORE_SETTING} to a directory (or configure object storage), ` +
              `or return a smaller value (e.g. a path or table name instead of the data)`,
          ),
        ),
      };
    } else {
      try {
        const ref = await this.options.outputStore.put(`outputs/${r.runId}/${r.stepId}-${r.tryNumber}.json`, outputJson);
        output = { ref, sizeBytes };
      } catch (err) {
        // The function did its work; the output store could not keep its value.
        return { ...base, outcome: "failed", retryable: true, failureClass: "infrastructure", error: serializeError(err) };
      }
    }
    return {
      ...base,
      outcome: "success",
      output,
      dataVersion,
      codeVersion: asset?.codeVersion ?? null,
      inputs: flight?.lineage ?? [],
    };
  }

  private async valueOf(
    rec: { inline: unknown; ref: string | null; hasOutput: boolean; gathered?: readonly GatheredItem[] },
    cache: Map<string, unknown>,
  ): Promise<unknown> {
    // A fanned-out partition: its mapped steps' outputs, in item order.
    if (rec.gathered) return Promise.all(rec.gathered.map((item) => this.valueOf(item, cache)));
    if (!rec.hasOutput) return null;
    if (rec.ref === null) return rec.inline;
    if (cache.has(rec.ref)) return cache.get(rec.ref);
    if (!this.options.outputStore) {
      throw new OutputStoreFailure(
        new StorageError(
          "OUTPUT_STORE_MISSING",
          `output ${rec.ref} lives in object storage, but no large-output store is configured (${OUTPUT_STORE_SETTING})`,
        ),
      );
    }
    let text: string;
    try {
      text = await this.options.outputStore.get(rec.ref);
    } catch (err) {
      throw new OutputStoreFailure(err);
    }
    const value = JSON.parse(text) as unknown;
    cache.set(rec.ref, value);
    return value;
  }
}

/** An input the output store could not give back (unreachable, or not configured here): not the step's failure. */
class OutputStoreFailure {
  constructor(readonly error: unknown) {}
}

interface InFlight {
  assetKey: string;
  /** A check's step: its output is a verdict, not a materialisation. */
  check?: NonNullable<StepDispatch["check"]>;
  window: StepDispatch["partition"]["window"];
  lineage: LineageInput[];
  versions: VersionedInput[];
}

function tryKey(stepId: number, tryNumber: number): string {
  return `${stepId}:${tryNumber}`;
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : `${Math.round(n / 1024)} KB`;
}
