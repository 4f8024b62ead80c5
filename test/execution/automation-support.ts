// What the automation suites share: automation tasks on connections of their own, as separate reconciler
// processes would have them, and reporting external events.
import type { Kysely } from "kysely";
import { reportAssetEvent } from "../../src/api/index.js";
import { AutomationTask, type AutomationTaskOptions } from "../../src/reconciler/index.js";
import {
  openPostgres,
  PgAutomationStore,
  PgEventStore,
  type AutomationStore,
  type Database,
  type PostgresHandle,
} from "../../src/storage/index.js";
import type { Harness } from "./harness.js";

export type AutomationTaskOverrides = Partial<Omit<AutomationTaskOptions, "store">> & {
  /** The store over the task's own connection (default: PgAutomationStore). */
  readonly store?: (db: Kysely<Database>) => AutomationStore;
};

/** Helpers over the harness `harness()` returns at the time of each call; `close()` in afterEach, before the harness stops. */
export function automationSupport(harness: () => Harness) {
  const handles: PostgresHandle[] = [];
  return {
    /** An automation task on its own connection, ticking as often as it is asked to. */
    async task(owner: string, overrides: AutomationTaskOverrides = {}): Promise<AutomationTask> {
      const h = harness();
      const handle = await openPostgres({ kind: "postgres", url: h.url, applicationName: owner });
      handles.push(handle);
      const { store, ...options } = overrides;
      return new AutomationTask({
        store: store ? store(handle.db) : new PgAutomationStore(handle.db),
        runs: h.runs,
        graphs: h.graphs,
        definitions: h.definitions,
        owner,
        minIntervalMs: 0,
        ...options,
      });
    },
    /** Reports an external event of the asset (of one partition, if given) now. */
    report(assetKey: string, partition?: string) {
      const h = harness();
      return reportAssetEvent(
        { graphs: h.graphs, events: new PgEventStore(h.db), definitions: h.definitions },
        partition === undefined ? { assetKey } : { assetKey, partition },
        new Date(),
      );
    },
    /** Closes the tasks' connections. */
    async close(): Promise<void> {
      for (const handle of handles.splice(0)) await handle.close().catch(() => undefined);
    },
  };
}
