import pc from "picocolors";
import { localGuard } from "../../access/index.js";
import type { ApiServices, RunChecksRequest } from "../../api/index.js";
import type { CheckResultView, RunStatus } from "../../storage/index.js";
import type { Execution } from "../execution.js";
import { pollUntilEnded } from "../follow-run.js";
import { printJson, table } from "../output.js";
import { openInProcess } from "../runs-client.js";
import type { Runtime } from "../runtime.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { CheckRunOptions } from "./check-run.js";

/** Where a check run stands. */
interface CheckRunState {
  readonly id: string;
  readonly status: RunStatus;
  readonly stepsTotal: number;
  readonly stepsDone: number;
  readonly stepsFailed: number;
}

/** One check's verdict on one partition, as printed. */
interface CheckOutcome {
  readonly checkName: string;
  /** Null for an unpartitioned asset. */
  readonly partitionKey: string | null;
  readonly passed: boolean;
  readonly severity: "warn" | "error";
  readonly blocking: boolean;
  readonly metadata: unknown;
  readonly error: { readonly code?: string; readonly message?: string } | null;
  readonly tryNumber: number | null;
}

/** Check runs through a running server's API or in this process: the command does not care which. */
interface CheckRunClient {
  readonly where: "server" | "in-process";
  start(request: RunChecksRequest): Promise<CheckRunState>;
  state(id: string): Promise<CheckRunState>;
  /** The run's results, oldest first. */
  results(id: string): Promise<CheckOutcome[]>;
  cancel(id: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * `tributary check-run <asset>`: starts a run of the asset's checks on the
 * latest materialisation of the chosen partitions; with --wait (always, in
 * process) follows it and prints each result, exit code 0 only if every
 * check passed. Bad input creates no run (the command layer validates first).
 */
export async function runCheckRun(key: string, opts: CheckRunOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const request: RunChecksRequest = {
    assetKey: key,
    ...(opts.partition.length > 0 ? { partitions: opts.partition } : {}),
    ...(opts.check.length > 0 ? { checks: opts.check } : {}),
  };
  const url = await serverFor(settings);
  const client = url ? new ServerCheckRunClient(url) : await InProcessCheckRunClient.open(settings);
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  try {
    const run = await client.start(request);
    const wait = Boolean(opts.wait) || client.where === "in-process";
    if (!wait) {
      if (opts.json) printJson({ ok: true, run });
      else process.stdout.write(`run ${run.id} started: ${run.stepsTotal} check step(s); follow it with \`tributary run ${run.id}\`\n`);
      return;
    }
    if (!opts.wait && !opts.json) process.stderr.write(pc.dim("no server is running: running the checks in this process\n"));
    const final = await follow(client, run, { progress: !opts.json && process.stderr.isTTY === true, interrupted: () => interrupted });
    const results = latestPerStep(await client.results(run.id));
    const ok = final.status === "success" && results.every((r) => r.passed);
    if (opts.json) printJson({ ok, run: final, results });
    else printResults(final, results);
    process.exitCode = ok ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    await client.close();
  }
}

/** Polls until the run ends, drawing a progress bar on a terminal; the first Ctrl-C cancels the run. */
function follow(
  client: CheckRunClient,
  run: CheckRunState,
  options: { progress: boolean; interrupted: () => boolean },
): Promise<CheckRunState> {
  return pollUntilEnded(
    "checks",
    run,
    async () => {
      const state = await client.state(run.id);
      return {
        value: state,
        counts: { ok: state.stepsDone - state.stepsFailed, failed: state.stepsFailed, running: state.stepsTotal - state.stepsDone },
      };
    },
    () => client.cancel(run.id),
    options,
  );
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A retried step records one result per try: the last one is its verdict. By partition, then check. */
function latestPerStep(results: readonly CheckOutcome[]): CheckOutcome[] {
  const byStep = new Map<string, CheckOutcome>();
  for (const r of results) byStep.set(`${r.checkName}\u0000${r.partitionKey ?? ""}`, r);
  return [...byStep.values()].sort((a, b) => cmp(a.partitionKey ?? "", b.partitionKey ?? "") || cmp(a.checkName, b.checkName));
}

function printResults(run: CheckRunState, results: readonly CheckOutcome[]): void {
  const failed = results.filter((r) => !r.passed).length;
  process.stdout.write(`run ${run.id}: ${run.status === "success" ? pc.green(run.status) : pc.red(run.status)}\n`);
  if (results.length > 0) {
    process.stdout.write(
      `${table(
        ["check", "partition", "result", "details"],
        results.map((r) => [
          r.checkName,
          r.partitionKey ?? "-",
          r.passed ? pc.green("passed") : r.severity === "warn" && !r.blocking ? pc.yellow("failed") : pc.red("failed"),
          r.error
            ? `[${r.error.code ?? "ERROR"}] ${(r.error.message ?? "").split("\n")[0]!.slice(0, 160)}`
            : JSON.stringify(r.metadata ?? {}),
        ]),
      )}\n`,
    );
  }
  if (results.length < run.stepsTotal)
    process.stdout.write(`${run.stepsTotal - results.length} check step(s) recorded no result (see \`tributary run ${run.id}\`)\n`);
  process.stdout.write(
    failed === 0 && results.length === run.stepsTotal
      ? `${pc.green("✓")} ${results.length} check result(s), all passed\n`
      : `${pc.red("✗")} ${failed} of ${results.length} check result(s) failed\n`,
  );
}

function outcomeOf(r: CheckResultView): CheckOutcome {
  return {
    checkName: r.checkName,
    partitionKey: r.partitionKey === "" ? null : r.partitionKey,
    passed: r.passed,
    severity: r.severity,
    blocking: r.blocking,
    metadata: r.metadata,
    error: r.error,
    tryNumber: r.tryNumber,
  };
}

function stateOf(r: { id: string; status: RunStatus; stepsTotal: number; stepsDone: number; stepsFailed: number }): CheckRunState {
  return { id: r.id, status: r.status, stepsTotal: r.stepsTotal, stepsDone: r.stepsDone, stepsFailed: r.stepsFailed };
}

/** This process as the server: the definitions synced, a reconciler and the local executor running the checks. */
class InProcessCheckRunClient implements CheckRunClient {
  readonly where = "in-process" as const;
  readonly #commands: Pick<ApiServices, "runs" | "assets">;

  private constructor(
    private readonly runtime: Runtime,
    private readonly execution: Execution | undefined,
  ) {
    this.#commands = runtime.apiContext();
  }

  static async open(settings: Settings): Promise<InProcessCheckRunClient> {
    const { runtime, execution } = await openInProcess(settings, { execute: true });
    return new InProcessCheckRunClient(runtime, execution);
  }

  async start(request: RunChecksRequest): Promise<CheckRunState> {
    const { runId } = await this.#commands.runs.runChecks(request, localGuard());
    this.execution?.reconciler.wake();
    return this.state(runId);
  }

  async state(id: string): Promise<CheckRunState> {
    return stateOf((await this.runtime.runs.getRun(id))!);
  }

  async results(id: string): Promise<CheckOutcome[]> {
    return ((await this.#commands.assets.checkResults.resultsOfRuns([id])).get(id) ?? []).map(outcomeOf);
  }

  async cancel(id: string): Promise<void> {
    await this.runtime.runs.requestCancel(id, new Date());
    this.execution?.reconciler.wake();
  }

  async close(): Promise<void> {
    await this.execution?.stop({ graceMs: 2_000 });
    await this.runtime.close();
  }
}

const STATE_FIELDS = "id status stepsTotal stepsDone stepsFailed";
const RESULT_FIELDS = "checkName partitionKey passed severity blocking metadata error tryNumber";

type WireResult = Omit<CheckOutcome, "severity"> & { severity: "WARN" | "ERROR" };

class ServerCheckRunClient implements CheckRunClient {
  readonly where = "server" as const;

  constructor(private readonly url: string) {}

  async start(request: RunChecksRequest): Promise<CheckRunState> {
    const data = await graphql<{ runChecks: CheckRunState }>(
      this.url,
      `mutation ($input: RunChecksInput!) { runChecks(input: $input) { ${STATE_FIELDS} } }`,
      { input: request },
    );
    return stateOf(data.runChecks);
  }

  async state(id: string): Promise<CheckRunState> {
    const data = await graphql<{ run: CheckRunState }>(this.url, `query ($id: String!) { run(id: $id) { ${STATE_FIELDS} } }`, { id });
    return stateOf(data.run);
  }

  async results(id: string): Promise<CheckOutcome[]> {
    const data = await graphql<{ run: { checkResults: WireResult[] } }>(
      this.url,
      `query ($id: String!) { run(id: $id) { checkResults { ${RESULT_FIELDS} } } }`,
      {
        id,
      },
    );
    return data.run.checkResults.map((r) => ({ ...r, severity: r.severity === "WARN" ? "warn" : "error" }));
  }

  async cancel(id: string): Promise<void> {
    await graphql(
      this.url,
      `
        mutation ($id: String!) {
          cancelRun(id: $id) {
            id
          }
        }
      `,
      { id },
    );
  }

  async close(): Promise<void> {}
}
