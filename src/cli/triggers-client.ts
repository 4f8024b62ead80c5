import type {
  ListTriggersOptions,
  TriggerCounts,
  TriggerFilter,
  TriggerPage,
  TriggerQueryStore,
  TriggerStatus,
  TriggerView,
} from "../storage/index.js";
import type { Runtime } from "./runtime.js";
import { graphql, serverFor } from "./server-client.js";
import type { Settings } from "./settings.js";

/** Triggers, through a running server's API or from the database in this process. */
export interface TriggersClient {
  list(options: ListTriggersOptions): Promise<TriggerPage>;
  counts(filter: Omit<TriggerFilter, "status">): Promise<TriggerCounts>;
  /** The keys of the defined assets (loading the definitions in this process when no server answered). */
  assetKeys(): Promise<string[]>;
  close(): Promise<void>;
}

/** Asks the server at --url when one answers; otherwise reads the database in this process. */
export async function connectTriggers(settings: Settings): Promise<TriggersClient> {
  const url = await serverFor(settings);
  if (url) return new ServerTriggersClient(url);
  const { openRuntime } = await import("./runtime.js");
  return new InProcessTriggersClient(await openRuntime(settings));
}

class InProcessTriggersClient implements TriggersClient {
  readonly #runtime: Runtime;
  readonly #triggers: TriggerQueryStore;

  constructor(runtime: Runtime) {
    this.#runtime = runtime;
    this.#triggers = runtime.apiContext().triggers;
  }

  list(options: ListTriggersOptions): Promise<TriggerPage> {
    return this.#triggers.listTriggers(options);
  }

  counts(filter: Omit<TriggerFilter, "status">): Promise<TriggerCounts> {
    return this.#triggers.countTriggers(filter);
  }

  async assetKeys(): Promise<string[]> {
    const { syncDefinitions } = await import("./definitions-sync.js");
    const { settings } = this.#runtime;
    await syncDefinitions(this.#runtime.definitions, { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
    return (await this.#runtime.catalog.current()).graph.keys();
  }

  close(): Promise<void> {
    return this.#runtime.close();
  }
}

/** The Trigger fields the CLI reads, for GraphQL selections (also Step.waitingFor in runs-client.ts). */
export const TRIGGER_FIELDS = `id kind args status stepId runId assetKey partitionKey partitionWindow attempts pollIntervalMs softFail
  nextCheckAt timeoutAt lastCheckedAt lastResult payload error leaseOwner leaseExpiresAt createdAt endedAt`;

type Wire = Record<string, unknown>;

class ServerTriggersClient implements TriggersClient {
  constructor(private readonly url: string) {}

  async list(options: ListTriggersOptions): Promise<TriggerPage> {
    const data = await graphql<{ triggers: { nodes: Wire[]; endCursor: string | null; hasNextPage: boolean } }>(
      this.url,
      `query ($status: String, $assetKey: String, $kind: String, $first: Int, $after: String) {
        triggers(status: $status, assetKey: $assetKey, kind: $kind, first: $first, after: $after) {
          nodes { ${TRIGGER_FIELDS} } endCursor hasNextPage } }`,
      { status: options.status, assetKey: options.assetKey, kind: options.kind, first: options.limit, after: options.after },
    );
    return { ...data.triggers, nodes: data.triggers.nodes.map(triggerFromWire) };
  }

  async counts(filter: Omit<TriggerFilter, "status">): Promise<TriggerCounts> {
    const data = await graphql<{ triggerCounts: { waiting: number; fired: number; failed: number; timedOut: number; canceled: number } }>(
      this.url,
      `
        query ($assetKey: String, $kind: String) {
          triggerCounts(assetKey: $assetKey, kind: $kind) {
            waiting
            fired
            failed
            timedOut
            canceled
          }
        }
      `,
      { assetKey: filter.assetKey, kind: filter.kind },
    );
    const { timedOut, ...rest } = data.triggerCounts;
    return { ...rest, timed_out: timedOut };
  }

  async assetKeys(): Promise<string[]> {
    const data = await graphql<{ assets: { key: string }[] }>(this.url, "{ assets { key } }");
    return data.assets.map((a) => a.key);
  }

  async close(): Promise<void> {}
}

const date = (v: unknown): Date | null => (typeof v === "string" ? new Date(v) : null);
const idOf = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** A Trigger as the API sends it (TRIGGER_FIELDS), back to the stored shape. */
export function triggerFromWire(w: Wire): TriggerView {
  return {
    id: Number(w.id),
    kind: String(w.kind),
    args: (w.args as Record<string, unknown>) ?? {},
    status: w.status as TriggerStatus,
    stepId: idOf(w.stepId),
    runId: (w.runId as string | null) ?? null,
    assetKey: (w.assetKey as string | null) ?? null,
    partitionKey: (w.partitionKey as string | null) ?? null,
    partitionWindow: (w.partitionWindow as TriggerView["partitionWindow"]) ?? null,
    attempts: Number(w.attempts),
    pollIntervalMs: Number(w.pollIntervalMs),
    softFail: w.softFail === true,
    nextCheckAt: date(w.nextCheckAt),
    timeoutAt: date(w.timeoutAt),
    lastCheckedAt: date(w.lastCheckedAt),
    lastResult: (w.lastResult as TriggerView["lastResult"]) ?? null,
    payload: (w.payload as TriggerView["payload"]) ?? null,
    error: (w.error as TriggerView["error"]) ?? null,
    leaseOwner: (w.leaseOwner as string | null) ?? null,
    leaseExpiresAt: date(w.leaseExpiresAt),
    createdAt: new Date(String(w.createdAt)),
    endedAt: date(w.endedAt),
  };
}
