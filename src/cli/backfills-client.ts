import { localGuard } from "../access/index.js";
import type { BackfillsApi, LaunchBackfillRequest } from "../api/index.js";
import { failedPartitionRanges } from "../api/views/index.js";
import { loadPartitionContext } from "../partitions/index.js";
import type { BackfillRecord, BackfillStatus } from "../storage/index.js";
import type { Execution } from "./execution.js";
import { openInProcess } from "./runs-client.js";
import type { Runtime } from "./runtime.js";
import { graphql, serverFor } from "./server-client.js";
import type { Settings } from "./settings.js";

/** A backfill as the CLI shows it (the same from the server and in-process). */
export interface BackfillView {
  readonly id: string;
  readonly status: BackfillStatus;
  readonly assetKeys: readonly string[];
  readonly from: string | null;
  readonly to: string | null;
  readonly partitions: readonly string[] | null;
  /** Keys or a range per dimension, when it was launched with a selection per dimension. */
  readonly dimensions:
    readonly { readonly name: string; readonly keys?: readonly string[]; readonly from?: string; readonly to?: string }[] | null;
  readonly retryOf: string | null;
  readonly maxConcurrentRuns: number;
  readonly maxPartitionsPerRun: number;
  readonly priority: number;
  readonly requested: number;
  readonly done: number;
  readonly failed: number;
  readonly inProgress: number;
  readonly covered: number;
  readonly chunks: number;
  readonly runsCreated: number;
  readonly waiting: string | null;
  readonly error: unknown;
  readonly createdAt: string;
  readonly canceledAt: string | null;
  readonly completedAt: string | null;
  readonly failedPartitions: readonly {
    readonly assetKey: string;
    readonly count: number;
    readonly ranges: readonly { from: string; to: string }[];
  }[];
}

/** Backfills, through a running server's API or in this process. */
export interface BackfillsClient {
  readonly where: "server" | "in-process";
  launch(request: LaunchBackfillRequest): Promise<BackfillView>;
  get(id: string): Promise<BackfillView | undefined>;
  list(options: { limit: number; status?: BackfillStatus }): Promise<BackfillView[]>;
  cancel(id: string): Promise<BackfillView>;
  resume(id: string): Promise<BackfillView>;
  retryFailed(id: string): Promise<BackfillView>;
  close(): Promise<void>;
}

/**
 * The server at --url when one answers; otherwise this process (with
 * `execute`, running a reconciler with the backfill task and the local
 * executor until close()).
 */
export async function connectBackfills(
  settings: Settings,
  options: { execute?: boolean; processes?: number } = {},
): Promise<BackfillsClient> {
  const url = await serverFor(settings);
  if (url) return new ServerBackfillsClient(url);
  const { runtime, execution } = await openInProcess(settings, options);
  return new InProcessBackfillsClient(runtime, execution);
}

class InProcessBackfillsClient implements BackfillsClient {
  readonly where = "in-process" as const;
  private readonly commands: BackfillsApi;

  constructor(
    private readonly runtime: Runtime,
    private readonly execution: Execution | undefined,
  ) {
    this.commands = runtime.apiContext().backfills;
  }

  async launch(request: LaunchBackfillRequest): Promise<BackfillView> {
    return this.woken(await this.commands.launch(request, localGuard()));
  }

  async get(id: string): Promise<BackfillView | undefined> {
    const record = await this.runtime.backfills.get(id);
    return record && this.view(record);
  }

  async list(options: { limit: number; status?: BackfillStatus }): Promise<BackfillView[]> {
    return Promise.all((await this.runtime.backfills.list(options)).map((r) => this.view(r)));
  }

  async cancel(id: string): Promise<BackfillView> {
    return this.woken(await this.commands.cancel(id, localGuard()));
  }

  async resume(id: string): Promise<BackfillView> {
    return this.woken(await this.commands.resume(id, localGuard()));
  }

  async retryFailed(id: string): Promise<BackfillView> {
    return this.woken(await this.commands.retryFailures(id, localGuard()));
  }

  async close(): Promise<void> {
    await this.execution?.stop({ graceMs: 2_000 });
    await this.runtime.close();
  }

  private woken(record: BackfillRecord): Promise<BackfillView> {
    this.execution?.reconciler.wake();
    return this.view(record);
  }

  private async view(record: BackfillRecord): Promise<BackfillView> {
    const { graph } = await this.runtime.graphs.current();
    const specs = Object.keys(record.cursor.failedPartitions).map((k) => graph.get(k)?.partitions ?? null);
    const ctx = await loadPartitionContext(specs, (name) => this.runtime.definitions.listDynamicPartitions(name));
    return {
      id: record.id,
      status: record.status,
      assetKeys: record.selection.assetKeys,
      from: record.selection.from ?? null,
      to: record.selection.to ?? null,
      partitions: record.selection.partitions ?? null,
      dimensions:
        record.selection.dimensions?.map((d) => ({
          name: d.name,
          ...(d.keys ? { keys: d.keys } : {}),
          ...(d.from ? { from: d.from } : {}),
          ...(d.to ? { to: d.to } : {}),
        })) ?? null,
      retryOf: record.selection.retryOf ?? null,
      maxConcurrentRuns: record.maxConcurrentRuns,
      maxPartitionsPerRun: record.maxPartitionsPerRun,
      priority: record.priority,
      requested: record.requested,
      done: record.done,
      failed: record.failed,
      inProgress: record.inProgress,
      covered: record.cursor.covered,
      chunks: record.cursor.chunks,
      runsCreated: record.cursor.runsCreated,
      waiting: record.cursor.waiting,
      error: record.error,
      createdAt: record.createdAt.toISOString(),
      canceledAt: record.canceledAt?.toISOString() ?? null,
      completedAt: record.completedAt?.toISOString() ?? null,
      failedPartitions: failedPartitionRanges(record, graph, ctx),
    };
  }
}

const BACKFILL_FIELDS = `id status assetKeys from to partitions dimensions retryOf maxConcurrentRuns maxPartitionsPerRun priority
  requested done failed inProgress covered chunks runsCreated waiting error createdAt canceledAt completedAt
  failedPartitions { assetKey count ranges { from to } }`;

class ServerBackfillsClient implements BackfillsClient {
  readonly where = "server" as const;

  constructor(private readonly url: string) {}

  async launch(request: LaunchBackfillRequest): Promise<BackfillView> {
    const input = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined));
    const data = await graphql<{ launchBackfill: BackfillView }>(
      this.url,
      `mutation ($input: LaunchBackfillInput!) { launchBackfill(input: $input) { ${BACKFILL_FIELDS} } }`,
      { input },
    );
    return data.launchBackfill;
  }

  async get(id: string): Promise<BackfillView | undefined> {
    const data = await graphql<{ backfill: BackfillView | null }>(
      this.url,
      `query ($id: String!) { backfill(id: $id) { ${BACKFILL_FIELDS} } }`,
      { id },
    );
    return data.backfill ?? undefined;
  }

  async list(options: { limit: number; status?: BackfillStatus }): Promise<BackfillView[]> {
    const data = await graphql<{ backfills: BackfillView[] }>(
      this.url,
      `query ($first: Int, $status: BackfillStatus) { backfills(first: $first, status: $status) { ${BACKFILL_FIELDS} } }`,
      { first: options.limit, status: options.status ?? null },
    );
    return data.backfills;
  }

  cancel(id: string): Promise<BackfillView> {
    return this.mutate("cancelBackfill", id);
  }

  resume(id: string): Promise<BackfillView> {
    return this.mutate("resumeBackfill", id);
  }

  retryFailed(id: string): Promise<BackfillView> {
    return this.mutate("retryBackfillFailures", id);
  }

  async close(): Promise<void> {}

  private async mutate(name: string, id: string): Promise<BackfillView> {
    const data = await graphql<Record<string, BackfillView>>(
      this.url,
      `mutation ($id: String!) { ${name}(id: $id) { ${BACKFILL_FIELDS} } }`,
      { id },
    );
    return data[name]!;
  }
}
