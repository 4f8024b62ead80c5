import { discoverDefinitionFiles } from "../loader/index.js";
import { PgTriggerStore } from "../storage/index.js";
import { builtInTriggers, envSqlConnections, pgMaterializedLookup } from "../trigger-checks/index.js";
import { Triggerer, TriggerKindProcess } from "../triggerer/index.js";
import type { Runtime } from "./runtime.js";
import { reportOutages } from "../health/index.js";

export interface StartTriggererOptions {
  readonly concurrency?: number;
  readonly capacity?: number;
  readonly checkTimeoutMs?: number;
  readonly leaseMs?: number;
  /**
   * The definitions files that export custom trigger kinds, when a load of the directory has just said (see
   * triggerKindFiles in the loader): only these are imported for them at start, and with none no child process starts. Without it,
   * every file is. A reload imports every file again.
   */
  readonly kindFiles?: readonly string[];
  readonly log: (level: "info" | "warn" | "error", message: string) => void;
}

export interface RunningTriggerer {
  readonly triggerer: Triggerer;
  /** Custom trigger kinds the definitions export (checked in a child process). */
  readonly customKinds: readonly string[];
  /** The definitions changed: imports them again for their custom trigger kinds. */
  reloadKinds(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a triggerer on the runtime's database: the built-in trigger kinds
 * run in this process, the custom kinds the definitions define run in a child
 * process that imports them (kept only while there are some).
 */
export async function startTriggerer(runtime: Runtime, options: StartTriggererOptions): Promise<RunningTriggerer> {
  const definitionsDir = runtime.settings.definitionsDir;
  const sql = envSqlConnections(process.env);
  const builtIns = builtInTriggers({ materialized: pgMaterializedLookup(runtime.database.db), connections: sql.connections });
  let kinds: TriggerKindProcess | undefined;
  let reloading = Promise.resolve();

  const loadKinds = async (known?: readonly string[]): Promise<void> => {
    const files =
      known ??
      (await discoverDefinitionFiles(definitionsDir).catch((err: unknown) => {
        options.log("warn", `no custom trigger kinds: ${(err as Error).message}`);
        return [];
      }));
    if (kinds) await kinds.reload(files);
    else if (files.length > 0) {
      kinds = await TriggerKindProcess.start({ definitionsDir, files }).catch((err: unknown) => {
        options.log("error", `custom trigger kinds are unavailable: ${(err as Error).message}`);
        return undefined;
      });
    }
    for (const e of kinds?.loadErrors ?? []) options.log("error", e.message);
    if (kinds && kinds.kinds.length === 0) {
      await kinds.close();
      kinds = undefined;
    }
  };

  await loadKinds(options.kindFiles);
  const triggerer = new Triggerer({
    store: new PgTriggerStore(runtime.database.db, runtime.decisions),
    registry: () => (kinds ? { ...builtIns, ...kinds.registry } : builtIns),
    listen: (channel, handler) => runtime.database.listen(channel, handler),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.capacity ? { capacity: options.capacity } : {}),
    ...(options.checkTimeoutMs ? { checkTimeoutMs: options.checkTimeoutMs } : {}),
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    onError: reportOutages(runtime.health, "postgres", (err, what: string) =>
      options.log("warn", `${what}: ${(err as Error)?.message ?? String(err)}`),
    ),
  });
  await triggerer.start();
  return {
    triggerer,
    get customKinds() {
      return kinds?.kinds ?? [];
    },
    reloadKinds() {
      reloading = reloading
        .then(() => loadKinds())
        .catch((err: unknown) => options.log("error", `reloading custom trigger kinds: ${(err as Error).message}`));
      return reloading;
    },
    async stop() {
      await reloading;
      await triggerer.stop();
      await kinds?.close();
      await sql.close();
    },
  };
}
