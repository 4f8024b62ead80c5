import { z } from "zod";
import { InputError, PartitionError, type SerializedError } from "../errors/index.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";
import { captureConsole, StepRuntime, timeoutError, type CheckOutput, type RuntimeHost } from "../executor/runtime/index.js";
import type { AssetGraph, SnapshotAsset } from "../graph/index.js";
import { partitionInfo, PartitionSubset, type PartitionContext } from "../partitions/index.js";
import {
  countUpstreamStates,
  evaluateTriggerRule,
  planRun,
  stepReads,
  type PartitionSelection,
  type PlannedStep,
} from "../planner/index.js";
import { findNonJson } from "../sdk/index.js";
import { assetFile, checkFile, EXPORT_NAME, memoryDefinitions, type DefinitionsInput } from "./definitions.js";
import { MemoryLog, type LogEntry } from "./memory-log.js";
import {
  MaterializeError,
  WHAT,
  type CheckReport,
  type MaterializeOptions,
  type MaterializeResult,
  type StepRef,
  type StepReport,
  type StepStatus,
} from "./materialize-types.js";
import { describeStep, memoryResult, stepKey } from "./memory-result.js";
import { payloadOf, secretsOf } from "./test-answers.js";

/** How often one step may defer and be entered again before the test is told its resolver never satisfies it. */
const MAX_REENTRIES = 100;
/** After a timeout aborts ctx.signal, how long the function has to return before it is given up on. */
const TIMEOUT_GRACE_MS = 1_000;

const optionsSchema = z
  .strictObject({
    partition: z.string().optional(),
    partitions: z.array(z.string()).min(1, "list at least one partition").optional(),
    from: z.string().min(1).optional(),
    to: z.string().min(1).optional(),
    upstreams: z.record(z.string(), z.unknown()).optional(),
    secrets: z.record(z.string(), z.string()).optional(),
    now: z.union([z.date(), z.string()]).optional(),
    triggers: z.strictObject({ resolve: z.unknown() }).optional(),
    dynamicPartitions: z.record(z.string(), z.array(z.string())).optional(),
    raiseOnError: z.boolean().optional(),
  })
  .superRefine((o, ctx) => {
    const forms = [o.partition !== undefined, o.partitions !== undefined, o.from !== undefined || o.to !== undefined].filter(Boolean);
    if (forms.length > 1) ctx.addIssue({ code: "custom", message: "give one of partition, partitions or from/to" });
    if ((o.from === undefined) !== (o.to === undefined)) ctx.addIssue({ code: "custom", message: "give both from and to" });
  });

/**
 * Materialises assets in the test's own process: plans the steps as a run would (the partitions selected in the
 * roots' definition, mapped through the dependencies' partition mappings, the assets' checks after them), then runs
 * each function in dependency order with the inputs a worker would hand it, under the assets' trigger rules and
 * timeouts, fan-out included. No database, no child process. Upstream assets not materialised here get their
 * values from `upstreams`; a value a step would read but no one provides is an error naming the upstream and the
 * partition, raised before any function runs. One try per step: retries are not applied.
 * @example
 * // given dailyRevenue: AssetDefinition<number>
 * const result = await materializeInMemory([dailyRevenue], {
 *   partition: "2025-03-10",
 *   upstreams: { "shop/raw_orders": (day: string) => [{ id: 1, day, amount: 12.5 }] },
 * });
 * result.output(dailyRevenue, "2025-03-10"); // typed as dailyRevenue's output
 */
export async function materializeInMemory(assets: DefinitionsInput, options: MaterializeOptions = {}): Promise<MaterializeResult> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length > 0 ? `options.${issue.path.join(".")}` : "options";
    throw new InputError(`${WHAT}: ${at}: ${issue.message}`, { code: "MATERIALIZE_OPTIONS_INVALID", location: { field: at } });
  }
  const now = options.now === undefined ? new Date() : new Date(options.now);
  if (Number.isNaN(now.getTime())) {
    throw new InputError(`${WHAT}: options.now: ${JSON.stringify(options.now)} is not a date`, { code: "MATERIALIZE_OPTIONS_INVALID" });
  }
  const defs = memoryDefinitions(WHAT, assets);
  const given = options.upstreams ?? {};
  for (const key of Object.keys(given)) {
    if (!defs.graph.has(key)) {
      const near = defs.graph.suggest(key);
      throw new InputError(
        `${WHAT}: options.upstreams: "${key}" is not one of the assets given${near ? ` (did you mean "${near}"?)` : ""}; ` +
          `give the definition of every asset a value is provided for`,
        { code: "MATERIALIZE_UNKNOWN_ASSET", location: { field: `upstreams.${key}` } },
      );
    }
  }
  const selected = [...defs.listed].filter((key) => defs.graph.require(key).kind === "asset" && !(key in given));
  if (selected.length === 0) {
    throw new InputError(
      `${WHAT}: nothing to materialise: give at least one asset that is neither a source asset nor in options.upstreams`,
      {
        code: "MATERIALIZE_NOTHING_SELECTED",
      },
    );
  }
  const dynamic = new Map(Object.entries(options.dynamicPartitions ?? {}).map(([name, keys]) => [name, [...keys]]));
  const ctx: PartitionContext = { dynamicKeys: (name: string) => dynamic.get(name) ?? [] };
  const plan = planRun({
    graph: defs.graph,
    version: 0,
    assets: selected,
    partitions: selectionOf(options),
    now,
    dynamicKeys: ctx.dynamicKeys,
    materialized: () => PartitionSubset.EMPTY,
    includeUpstream: false,
  });
  const notExisting = plan.missing.find((m) => m.reason === "not_existing");
  if (notExisting) {
    throw new PartitionError(`${WHAT}: ${notExisting.detail}`, {
      code: "MATERIALIZE_UPSTREAM_NOT_EXISTING",
      location: { assetKey: notExisting.neededBy },
    });
  }
  const run = new MemoryRun(defs.graph, defs.modules, plan.steps, ctx, now, options, dynamic);
  await run.prepareUpstreams();
  const undoConsole = captureConsole();
  try {
    await run.execute();
  } finally {
    undoConsole();
  }
  const result = run.result();
  if (options.raiseOnError !== false) {
    const failures = result.steps.filter((s) => s.status === "failed");
    if (failures.length > 0) {
      const listed = failures
        .slice(0, 5)
        .map((s) => `${describeStep(s)}: ${s.error?.message ?? "failed"}`)
        .join("; ");
      throw new MaterializeError(`${WHAT}: ${failures.length} step(s) failed: ${listed}${failures.length > 5 ? "; …" : ""}`, result);
    }
  }
  return result;
}

function selectionOf(o: MaterializeOptions): PartitionSelection | undefined {
  if (o.partition !== undefined) return { kind: "keys", keys: [o.partition] };
  if (o.partitions !== undefined) return { kind: "keys", keys: o.partitions };
  if (o.from !== undefined && o.to !== undefined) return { kind: "range", from: o.from, to: o.to };
  return undefined;
}

interface StepState {
  status: StepStatus;
  output?: unknown;
  error?: SerializedError;
  reason?: string;
  trigger?: StepReport["trigger"];
  logs: LogEntry[];
}

/** One in-memory run: the plan's steps, their states and outputs. */
class MemoryRun {
  private readonly runtime: StepRuntime;
  private readonly states: StepState[] = [];
  private readonly reports: StepReport[] = [];
  private readonly checkReports: CheckReport[] = [];
  /** The asset step of each (asset, partition) of the plan. */
  private readonly planned = new Map<string, number>();
  /** The values of provided upstream partitions, after JSON. */
  private readonly provided = new Map<string, unknown>();
  private nextStepId: number;
  private readonly logs = new Map<number, MemoryLog>();

  constructor(
    private readonly graph: AssetGraph,
    private readonly modules: ReadonlyMap<string, Record<string, unknown>>,
    private readonly steps: readonly PlannedStep[],
    private readonly ctx: PartitionContext,
    private readonly now: Date,
    private readonly options: MaterializeOptions,
    private readonly dynamic: Map<string, string[]>,
  ) {
    for (const s of steps) if (s.check === undefined) this.planned.set(stepKey(s.assetKey, s.partitionKey), s.index);
    this.nextStepId = steps.length + 1;
    const host: RuntimeHost = {
      importModule: (file) => Promise.resolve(this.modules.get(file) ?? {}),
      addDynamicPartitions: (name, keys) => {
        const list = this.dynamic.get(name) ?? [];
        for (const k of keys) if (!list.includes(k)) list.push(k);
        this.dynamic.set(name, list);
        return Promise.resolve();
      },
      materialized: (assetKey, partitionKey) => {
        const key = stepKey(assetKey, partitionKey);
        const index = this.planned.get(key);
        if (index !== undefined) return Promise.resolve(this.states[index]?.status === "success" ? { eventId: index + 1 } : undefined);
        return Promise.resolve(this.provided.has(key) ? { eventId: 0 } : undefined);
      },
      secrets: secretsOf(options.secrets, WHAT),
      openLog: (d) => {
        const log = new MemoryLog();
        this.logs.set(d.stepId, log);
        return log;
      },
      // Poke and reschedule waits pass at once with the test's payload; without one, they check for real.
      answerWait: async (trigger, d) => {
        const resolver = this.options.triggers;
        return resolver ? { payload: await payloadOf(resolver, { kind: trigger.kind, args: trigger.args }, refOf(d)) } : undefined;
      },
    };
    this.runtime = new StepRuntime(host);
  }

  /**
   * Every value a step reads from outside the plan, computed and checked before any function runs: one nobody
   * provides is an error naming the reader, its input, the upstream and the partition.
   */
  async prepareUpstreams(): Promise<void> {
    const given = this.options.upstreams ?? {};
    for (const s of this.steps) {
      if (s.check !== undefined) continue;
      const asset = this.graph.require(s.assetKey);
      for (const read of stepReads(this.graph, asset, s.partitionKey, this.ctx, this.now)) {
        for (const key of read.keys) {
          const k = stepKey(read.assetKey, key);
          if (this.planned.has(k) || this.provided.has(k)) continue;
          const partition = key === "" ? "" : ` partition "${key}"`;
          const where = `${WHAT}: asset "${s.assetKey}"${s.partitionKey === "" ? "" : ` partition "${s.partitionKey}"`} reads "${read.assetKey}"${partition} (input "${read.name}")`;
          if (!Object.hasOwn(given, read.assetKey)) {
            throw new InputError(
              `${where}, which is not materialised here and has no value: give it in options.upstreams ` +
                `({ "${read.assetKey}": value } or { "${read.assetKey}": (partition) => value }), or add its asset to the list`,
              {
                code: "MATERIALIZE_UPSTREAM_MISSING",
                location: { assetKey: s.assetKey, partitionKey: s.partitionKey, field: `upstreams.${read.assetKey}` },
              },
            );
          }
          const source = given[read.assetKey];
          let value: unknown;
          try {
            value = typeof source === "function" ? await (source as (partition: string) => unknown)(key) : source;
          } catch (err) {
            throw new InputError(
              `${where}: options.upstreams["${read.assetKey}"] threw: ${err instanceof Error ? err.message : String(err)}`,
              {
                code: "MATERIALIZE_UPSTREAM_MISSING",
                cause: err,
              },
            );
          }
          if (value === undefined) {
            throw new InputError(
              `${where}: options.upstreams["${read.assetKey}"] gave undefined for it; give a value (null for a partition without one)`,
              {
                code: "MATERIALIZE_UPSTREAM_MISSING",
                location: { assetKey: read.assetKey, partitionKey: key, field: `upstreams.${read.assetKey}` },
              },
            );
          }
          const bad = findNonJson(value, `upstreams["${read.assetKey}"]`);
          if (bad) {
            throw new InputError(`${where}: the value given cannot be stored as JSON, as an output must: value at ${bad}`, {
              code: "MATERIALIZE_UPSTREAM_INVALID",
              location: { assetKey: read.assetKey, partitionKey: key },
            });
          }
          this.provided.set(k, JSON.parse(JSON.stringify(value)) as unknown);
        }
      }
    }
  }

  async execute(): Promise<void> {
    for (const step of this.steps) {
      const state = await this.runStep(step);
      this.states[step.index] = state;
      this.reports.push(this.report(step, state));
    }
  }

  private async runStep(step: PlannedStep): Promise<StepState> {
    const asset = this.graph.require(step.assetKey);
    const upstreamStates = step.upstream.map((i) => this.states[i]!.status);
    if (upstreamStates.some((st) => st === "deferred" || st === "rescheduled" || st === "pending")) {
      return { status: "pending", reason: "an upstream step has not ended", logs: [] };
    }
    const rule = step.check === undefined ? asset.triggerRule : "all_success";
    const decision = evaluateTriggerRule(rule, countUpstreamStates(upstreamStates));
    if (decision === "upstream_failed") return { status: "upstream_failed", reason: `trigger rule ${rule}: an upstream failed`, logs: [] };
    if (decision === "skipped") return { status: "skipped", reason: `trigger rule ${rule}`, logs: [] };
    if (decision === "wait") return { status: "pending", reason: `trigger rule ${rule} is not met`, logs: [] };
    if (step.check !== undefined) return this.runCheck(step, step.check);
    const inputs = this.inputsOf(asset, step.partitionKey);
    const dispatch = this.dispatch(asset, step.partitionKey, -1);
    const first = await this.tryStep(dispatch, inputs);
    if (first.outcome.kind !== "expanded") return first.state;
    return this.runMapped(asset, step.partitionKey, inputs, first.outcome, first.state.logs);
  }

  private inputsOf(asset: SnapshotAsset, partitionKey: string): Record<string, unknown> {
    const inputs: Record<string, unknown> = {};
    for (const read of stepReads(this.graph, asset, partitionKey, this.ctx, this.now)) {
      const values: unknown[] = [];
      for (const key of read.keys) {
        const k = stepKey(read.assetKey, key);
        const index = this.planned.get(k);
        if (index === undefined) values.push(this.provided.get(k));
        else if (this.states[index]?.status === "success") values.push(this.states[index].output);
        // A planned upstream that did not succeed has no value (a reader under a rule other than all_success runs anyway).
      }
      inputs[read.name] = read.many ? values : (values[0] ?? null);
    }
    return inputs;
  }

  private dispatch(asset: SnapshotAsset, partitionKey: string, mapIndex: number, extra: Partial<StepDispatch> = {}): StepDispatch {
    return {
      stepId: this.nextStepId++,
      runId: "in-memory",
      tryNumber: 1,
      lastTry: 1,
      assetKey: asset.key,
      partitionKey,
      mapIndex,
      partition: partitionInfo(asset.partitions, partitionKey),
      file: assetFile(asset.key),
      exportName: EXPORT_NAME,
      timeoutMs: asset.timeoutMs,
      logRef: "(in memory)",
      ...extra,
    };
  }

  /** Runs one step's function, entering it again after each deferred wait the test resolves. */
  private async tryStep(first: StepDispatch, inputs: Record<string, unknown>): Promise<{ outcome: StepOutcome; state: StepState }> {
    let d = first;
    const logs: LogEntry[] = [];
    for (let entry = 1; ; entry++) {
      const outcome = await this.runOnce(d, inputs);
      logs.push(...(this.logs.get(d.stepId)?.entries ?? []));
      this.logs.delete(d.stepId);
      if (outcome.kind !== "deferred") return { outcome, state: stateOf(outcome, logs) };
      const trigger = { kind: outcome.trigger.kind, args: outcome.trigger.args };
      const resolver = this.options.triggers;
      if (!resolver) return { outcome, state: { status: "deferred", trigger, logs } };
      if (entry >= MAX_REENTRIES) {
        const error = new InputError(
          `${WHAT}: ${describeStep({
            assetKey: first.assetKey,
            partitionKey: first.partitionKey,
            check: first.check?.name,
            mapIndex: first.mapIndex >= 0 ? first.mapIndex : undefined,
          })} deferred ${entry} times; options.triggers.resolve never gave a payload its code accepts`,
          { code: "MATERIALIZE_DEFER_LOOP" },
        );
        return { outcome, state: { status: "failed", error: error.toJSON(), logs } };
      }
      const payload = await payloadOf(resolver, trigger, refOf(d));
      d = { ...d, stepId: this.nextStepId++, resumed: [...(d.resumed ?? []), { ...trigger, payload }] };
    }
  }

  /** One entry into the function, under the asset's timeout. */
  private async runOnce(d: StepDispatch, inputs: Record<string, unknown>): Promise<StepOutcome> {
    const timers: NodeJS.Timeout[] = [];
    if (d.timeoutMs !== null) {
      const timeoutMs = d.timeoutMs;
      timers.push(
        setTimeout(() => {
          this.runtime.abort(d.stepId, timeoutError(d, timeoutMs));
          timers.push(
            setTimeout(() => {
              const error = timeoutError(d, timeoutMs).toJSON();
              this.runtime.abandon(d.stepId, { kind: "failed", error, retryable: true, failureClass: "user" });
            }, TIMEOUT_GRACE_MS),
          );
        }, timeoutMs),
      );
    }
    try {
      return (await this.runtime.run(d, inputs)).outcome;
    } finally {
      for (const t of timers) clearTimeout(t);
    }
  }

  /** A fan-out: one mapped step per item, their outputs gathered in item order. */
  private async runMapped(
    asset: SnapshotAsset,
    partitionKey: string,
    inputs: Record<string, unknown>,
    expanded: Extract<StepOutcome, { kind: "expanded" }>,
    logs: LogEntry[],
  ): Promise<StepState> {
    const items = JSON.parse(expanded.itemsJson) as unknown[];
    const outputs: unknown[] = [];
    let failure: SerializedError | undefined;
    let pending = false;
    for (let index = 0; index < items.length; index++) {
      const d = this.dispatch(asset, partitionKey, index, { map: { index, item: items[index], label: expanded.labels?.[index] ?? null } });
      const { state } = await this.tryStep(d, inputs);
      this.reports.push({ ...this.report({ assetKey: asset.key, partitionKey }, state), mapIndex: index });
      if (state.status === "failed") failure ??= state.error;
      if (state.status === "deferred" || state.status === "rescheduled") pending = true;
      outputs.push(state.status === "success" ? state.output : null);
    }
    if (failure) return { status: "failed", error: failure, logs };
    if (pending) return { status: "pending", reason: "a mapped step has not ended", logs };
    return { status: "success", output: outputs, logs };
  }

  private async runCheck(step: PlannedStep, name: string): Promise<StepState> {
    const spec = this.graph.checksFor(step.assetKey).find((c) => c.name === name)!;
    const asset = this.graph.require(step.assetKey);
    const k = stepKey(step.assetKey, step.partitionKey);
    const value = this.states[this.planned.get(k)!]?.output ?? null;
    const d = this.dispatch(asset, step.partitionKey, -1, {
      file: checkFile(spec.assetKey, spec.name),
      check: { name: spec.name, blocking: spec.blocking, severity: spec.severity },
    });
    const { outcome, state } = await this.tryStep(d, { value });
    if (outcome.kind !== "success") return state;
    const verdict = JSON.parse(outcome.outputJson) as CheckOutput;
    this.checkReports.push({
      assetKey: spec.assetKey,
      name: spec.name,
      partitionKey: step.partitionKey,
      blocking: spec.blocking,
      passed: verdict.passed,
      metadata: verdict.metadata,
      error: verdict.error,
    });
    // As a run records it: a failed blocking check fails its step, so the partition's readers end upstream_failed.
    if (verdict.passed || !spec.blocking) return { ...state, output: verdict };
    return {
      status: "failed",
      output: verdict,
      error: verdict.error ?? { name: "TributaryError", code: "CHECK_FAILED", message: `blocking check "${spec.name}" failed` },
      logs: state.logs,
    };
  }

  private report(step: Pick<PlannedStep, "assetKey" | "partitionKey" | "check">, state: StepState): StepReport {
    return {
      assetKey: step.assetKey,
      partitionKey: step.partitionKey,
      ...(step.check === undefined ? {} : { check: step.check }),
      status: state.status,
      ...(state.status === "success" || state.output !== undefined ? { output: state.output } : {}),
      ...(state.error ? { error: state.error } : {}),
      ...(state.reason === undefined ? {} : { reason: state.reason }),
      ...(state.trigger ? { trigger: state.trigger } : {}),
      logs: state.logs,
    };
  }

  result(): MaterializeResult {
    return memoryResult(this.graph, this.reports, this.checkReports);
  }
}

function stateOf(outcome: StepOutcome, logs: LogEntry[]): StepState {
  switch (outcome.kind) {
    case "success":
      return { status: "success", output: JSON.parse(outcome.outputJson) as unknown, logs };
    case "failed":
      return { status: "failed", error: outcome.error, logs };
    case "skipped":
      return { status: "skipped", reason: outcome.reason, logs };
    case "rescheduled":
      return { status: "rescheduled", reason: `checks again at ${new Date(outcome.nextCheckAt).toISOString()}`, logs };
    case "deferred":
      return { status: "deferred", trigger: { kind: outcome.trigger.kind, args: outcome.trigger.args }, logs };
    case "expanded":
      return { status: "pending", reason: "fanned out", logs };
  }
}

function refOf(d: StepDispatch): StepRef {
  return { assetKey: d.assetKey, partitionKey: d.partitionKey };
}
