import { localGuard } from "../access/index.js";
import type { ApiServices, ClearPartitionsRequest, LaunchRunRequest } from "../api/index.js";
import { InputError } from "../errors/index.js";
import type { MappedStepRef, RunDetail, RunStatus, RunSummary, StepRecord, TriggerView } from "../storage/index.js";
import { TRIGGER_FIELDS, triggerFromWire } from "./triggers-client.js";
// Types only: the in-process pieces (database, loader, executor) are loaded when a command works without a server.
import type { Execution } from "./execution.js";
import type { Runtime } from "./runtime.js";
import { graphql, serverFor } from "./server-client.js";
import type { Settings } from "./settings.js";

/** A step with its current trigger (what it waits for while deferred). */
export interface StepView extends StepRecord {
  readonly waitingFor?: TriggerView | null;
}

/** A run whose steps carry their current triggers. */
export interface RunView extends RunDetail {
  readonly steps: readonly StepView[];
}

/** Runs, through a running server's API or in this process: the commands don't care which. */
export interface RunsClient {
  readonly where: "server" | "in-process";
  launch(request: LaunchRunRequest): Promise<RunSummary>;
  /** Clears chosen partitions (optionally with their downstream ones) and reruns them in one run. */
  clear(request: ClearPartitionsRequest): Promise<RunSummary>;
  /** Runs one mapped step of a run again, inside that run (which reopens). */
  clearMappedStep(target: MappedStepRef): Promise<RunSummary>;
  get(id: string): Promise<RunView | undefined>;
  list(options: { limit: number; status?: RunStatus }): Promise<RunSummary[]>;
  cancel(id: string): Promise<RunSummary>;
  close(): Promise<void>;
}

/**
 * Asks the server at --url when one answers; otherwise opens the database in
 * this process (and, when `execute` is set, runs a reconciler and the local
 * executor for the duration of the command).
 */
export async function connectRuns(settings: Settings, options: { execute?: boolean; processes?: number } = {}): Promise<RunsClient> {
  const url = await serverFor(settings);
  if (url) return new ServerRunsClient(url);
  const { runtime, execution } = await openInProcess(settings, options);
  return new InProcessRunsClient(runtime, execution);
}

/**
 * This process as the server: the database opened here, and with `execute`
 * the definitions synced and a reconciler and the local executor running.
 */
export async function openInProcess(
  settings: Settings,
  options: { execute?: boolean; processes?: number } = {},
): Promise<{ runtime: Runtime; execution: Execution | undefined }> {
  const { openRuntime, openWithCurrentDefinitions } = await import("./runtime.js");
  if (!options.execute) return { runtime: await openRuntime(settings), execution: undefined };
  const [{ runtime, sync }, { startExecution }, { triggerKindFiles }] = await Promise.all([
    openWithCurrentDefinitions(settings),
    import("./execution.js"),
    import("../loader/index.js"),
  ]);
  try {
    for (const f of sync.result.files) {
      if (f.status === "error") process.stderr.write(`warning: ${f.error?.message ?? f.file}\n`);
    }
    const execution = await startExecution(runtime, {
      ...(options.processes ? { processes: options.processes } : {}),
      // Nothing else may be checking this run's waits (the embedded database is this process's alone).
      triggerer: true,
      triggerKindFiles: triggerKindFiles(sync.result.files),
      log: (level, message) => {
        if (level !== "info") process.stderr.write(`[${level}] ${message}\n`);
      },
    });
    return { runtime, execution };
  } catch (err) {
    await runtime.close();
    throw err;
  }
}

class InProcessRunsClient implements RunsClient {
  readonly where = "in-process" as const;

  constructor(
    private readonly runtime: Runtime,
    private readonly execution: Execution | undefined,
  ) {
    // The same commands the API runs, wired once in the runtime.
    this.commands = runtime.apiContext();
  }

  private readonly commands: Pick<ApiServices, "runs" | "triggers">;

  async launch(request: LaunchRunRequest): Promise<RunSummary> {
    return this.started((await this.commands.runs.launch(request, localGuard())).runId);
  }

  async clear(request: ClearPartitionsRequest): Promise<RunSummary> {
    return this.started((await this.commands.runs.clearPartitions(request, localGuard())).runId);
  }

  async clearMappedStep(target: MappedStepRef): Promise<RunSummary> {
    return this.started((await this.runtime.runs.clearMappedStep(target, new Date())).run.id);
  }

  private async started(runId: string): Promise<RunSummary> {
    this.execution?.reconciler.wake();
    return (await this.runtime.runs.getRun(runId))!;
  }

  async get(id: string): Promise<RunView | undefined> {
    const run = await this.runtime.runs.getRun(id);
    if (!run) return undefined;
    const triggers = await this.commands.triggers.currentTriggersOfSteps(run.steps.map((s) => s.id));
    return { ...run, steps: run.steps.map((s) => ({ ...s, waitingFor: triggers.get(s.id) ?? null })) };
  }

  list(options: { limit: number; status?: RunStatus }): Promise<RunSummary[]> {
    return this.runtime.runs.listRuns(options);
  }

  async cancel(id: string): Promise<RunSummary> {
    const run = await this.runtime.runs.requestCancel(id, new Date());
    this.execution?.reconciler.wake();
    return run;
  }

  async close(): Promise<void> {
    await this.execution?.stop({ graceMs: 2_000 });
    await this.runtime.close();
  }
}

const RUN_FIELDS = `id status origin definitionsVersion jobName priority tags stepsTotal stepsDone stepsFailed stepsActive
  createdAt startedAt endedAt cancelRequestedAt planVersion`;
const STEP_FIELDS = `id assetKey partitionKey mapIndex mapLabel mapCount checkName state tryNumber maxTries pool priority scheduledAt queuedAt startedAt
  endedAt nextRetryAt workerId skipReason error upstreamStepIds
  tries { tryNumber state workerId hostname pid queuedAt startedAt endedAt durationMs error failureClass logRef }
  waitingFor { ${TRIGGER_FIELDS} }`;

type Wire = Record<string, unknown>;

class ServerRunsClient implements RunsClient {
  readonly where = "server" as const;

  constructor(private readonly url: string) {}

  async launch(request: LaunchRunRequest): Promise<RunSummary> {
    const input = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined));
    const data = await graphql<{ launchRun: Wire }>(
      this.url,
      `mutation ($input: LaunchRunInput!) { launchRun(input: $input) { ${RUN_FIELDS} } }`,
      { input },
    );
    return toSummary(data.launchRun);
  }

  async clear(request: ClearPartitionsRequest): Promise<RunSummary> {
    const input = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined));
    const data = await graphql<{ clearPartitions: Wire }>(
      this.url,
      `mutation ($input: ClearPartitionsInput!) { clearPartitions(input: $input) { ${RUN_FIELDS} } }`,
      { input },
    );
    return toSummary(data.clearPartitions);
  }

  async clearMappedStep(target: MappedStepRef): Promise<RunSummary> {
    const data = await graphql<{ clearMappedStep: Wire }>(
      this.url,
      `mutation ($input: ClearMappedStepInput!) { clearMappedStep(input: $input) { ${RUN_FIELDS} } }`,
      { input: { runId: target.runId, assetKey: target.assetKey, partition: target.partitionKey, mapIndex: target.mapIndex } },
    );
    return toSummary(data.clearMappedStep);
  }

  async get(id: string): Promise<RunView | undefined> {
    const data = await graphql<{ run: Wire | null }>(
      this.url,
      `query ($id: String!) { run(id: $id) { ${RUN_FIELDS} steps { ${STEP_FIELDS} } } }`,
      { id },
    );
    if (!data.run) return undefined;
    const run = toSummary(data.run);
    return { ...run, plan: null, steps: (data.run.steps as Wire[]).map((s) => toStep(s, run.id)) };
  }

  async list(options: { limit: number; status?: RunStatus }): Promise<RunSummary[]> {
    const data = await graphql<{ runs: Wire[] }>(
      this.url,
      `query ($first: Int, $status: RunStatus) { runs(first: $first, status: $status) { ${RUN_FIELDS} } }`,
      { first: options.limit, status: options.status ?? null },
    );
    return data.runs.map(toSummary);
  }

  async cancel(id: string): Promise<RunSummary> {
    const data = await graphql<{ cancelRun: Wire }>(this.url, `mutation ($id: String!) { cancelRun(id: $id) { ${RUN_FIELDS} } }`, { id });
    return toSummary(data.cancelRun);
  }

  async close(): Promise<void> {}
}

const date = (v: unknown): Date | null => (typeof v === "string" ? new Date(v) : null);

function toSummary(r: Wire): RunSummary {
  return {
    id: String(r.id),
    status: r.status as RunStatus,
    origin: r.origin as RunSummary["origin"],
    snapshotVersion: Number(r.definitionsVersion),
    jobName: (r.jobName as string | null) ?? null,
    priority: Number(r.priority),
    tags: (r.tags as Record<string, unknown>) ?? {},
    stepsTotal: Number(r.stepsTotal),
    stepsDone: Number(r.stepsDone),
    stepsFailed: Number(r.stepsFailed),
    stepsActive: Number(r.stepsActive),
    createdAt: new Date(String(r.createdAt)),
    startedAt: date(r.startedAt),
    endedAt: date(r.endedAt),
    cancelRequestedAt: date(r.cancelRequestedAt),
    backfillId: null,
    planVersion: Number(r.planVersion ?? 1),
  };
}

function toStep(s: Wire, runId: string): StepView {
  return {
    waitingFor: s.waitingFor ? triggerFromWire(s.waitingFor as Wire) : null,
    id: Number(s.id),
    runId,
    assetKey: String(s.assetKey),
    partitionKey: String(s.partitionKey),
    mapIndex: Number(s.mapIndex),
    checkName: typeof s.checkName === "string" ? s.checkName : null,
    mapLabel: typeof s.mapLabel === "string" ? s.mapLabel : null,
    mapCount: typeof s.mapCount === "number" ? s.mapCount : null,
    state: s.state as StepRecord["state"],
    tryNumber: Number(s.tryNumber),
    maxTries: Number(s.maxTries),
    pool: String(s.pool),
    priority: Number(s.priority),
    scheduledAt: date(s.scheduledAt),
    queuedAt: date(s.queuedAt),
    startedAt: date(s.startedAt),
    endedAt: date(s.endedAt),
    nextRetryAt: date(s.nextRetryAt),
    workerId: (s.workerId as string | null) ?? null,
    skipReason: (s.skipReason as string | null) ?? null,
    error: s.error ?? null,
    upstream: (s.upstreamStepIds as string[]).map(Number),
    tries: (s.tries as Wire[]).map((t) => ({
      tryNumber: Number(t.tryNumber),
      state: t.state as StepRecord["state"],
      workerId: (t.workerId as string | null) ?? null,
      hostname: (t.hostname as string | null) ?? null,
      pid: (t.pid as number | null) ?? null,
      queuedAt: date(t.queuedAt),
      startedAt: date(t.startedAt),
      endedAt: date(t.endedAt),
      durationMs: (t.durationMs as number | null) ?? null,
      error: t.error ?? null,
      failureClass: t.failureClass === "INFRASTRUCTURE" ? "infrastructure" : t.failureClass === "USER" ? "user" : null,
      logRef: (t.logRef as string | null) ?? null,
    })),
  };
}

export function requireRun(run: RunDetail | undefined, id: string): RunDetail {
  if (!run)
    throw new InputError(
      `no run has the id "${id}"; list runs with \`tributary runs\` (a run past the history retention is archived: \`tributary archive list\`)`,
      { code: "RUN_NOT_FOUND" },
    );
  return run;
}
