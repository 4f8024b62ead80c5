import pc from "picocolors";
import { watchDefinitions } from "../../loader/index.js";
import { persistLoad, previousGoodFromStore, syncDefinitions } from "../definitions-sync.js";
import { startExecution } from "../execution.js";
import { durationMs, positiveInt } from "../options.js";
import { embeddedDbDir, openRuntime } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { ReconcilerCommandOptions } from "./reconciler.js";

/** `tributary reconciler`: loads the definitions, then schedules and runs steps until SIGINT/SIGTERM. */
export async function runReconciler(opts: ReconcilerCommandOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const processes = positiveInt(opts.processes, "--processes");
  const concurrencyPerProcess = positiveInt(opts.concurrencyPerProcess, "--concurrency-per-process");
  const zombieAfterMs = durationMs(opts.zombieAfter, "--zombie-after");
  const queuedTimeoutMs = durationMs(opts.queuedTimeout, "--queued-timeout");
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);
  const runtime = await openRuntime(settings);
  log(`database: ${runtime.database.kind === "pglite" ? `embedded (${embeddedDbDir(settings)})` : "postgres (DATABASE_URL)"}`);
  // Any reconciler may store the definitions: an unchanged content hash writes nothing.
  const watcher = opts.watch
    ? watchDefinitions(settings.definitionsDir, (change) => persistLoad(runtime.definitions, change.result, {
        ...(change.initial ? {} : { reloaded: change.reloaded }),
        removed: change.removed,
      }).then(() => undefined), {
        timeoutMs: settings.loadTimeoutMs,
        previousGood: await previousGoodFromStore(runtime.definitions),
        onError: (err) => log(`${pc.red("error")} reloading definitions: ${(err as Error).message}`),
      })
    : undefined;
  if (watcher) await watcher.ready;
  else {
    const { version, changed, result } = await syncDefinitions(runtime.definitions, { dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
    log(`definitions: ${result.snapshot.assets.length} assets, version ${version}${changed ? " (new)" : ""}`);
    for (const f of result.files) if (f.status === "error") log(`${pc.red("error")} ${f.error?.message ?? f.file}`);
  }
  const execution = await startExecution(runtime, {
    ...(processes ? { processes } : {}),
    ...(concurrencyPerProcess ? { concurrencyPerProcess } : {}),
    ...(zombieAfterMs ? { zombieAfterMs } : {}),
    ...(queuedTimeoutMs ? { queuedTimeoutMs } : {}),
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} ${message}`),
  });
  log(`reconciler ${execution.reconciler.id} is running`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log(`${signal}: finishing running steps (up to 30 s), then stopping`);
      resolve();
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  await watcher?.close();
  await execution.stop({ graceMs: 30_000 });
  await runtime.close();
}
