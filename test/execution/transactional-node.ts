// A separate "tributary" process for the transactional executor's kill test:
// a reconciler with only the transactional executor, against the test's
// database. Run with `node --import tsx transactional-node.ts <url> <defsDir>
// <logsDir>` and TRIBUTARY_FAULTS (e.g. tx:after-function=kill): the fault
// point ends the process with SIGKILL mid-transaction. It imports the
// definitions the way `tributary reconciler` does (the executor's default,
// through the worker's module hooks). It prints "ready" once its reconciler runs.
import { StoreExecutionBackend, TransactionalExecutor } from "../../src/executor/index.js";
import { Reconciler } from "../../src/reconciler/index.js";
import { GraphCache, openPostgres, PgDefinitionStore, PgRunStore } from "../../src/storage/index.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

const [url, defsDir, logsDir] = process.argv.slice(2);
if (!url || !defsDir || !logsDir) {
  process.stderr.write("usage: transactional-node.ts <url> <defsDir> <logsDir>\n");
  process.exit(2);
}

const handle = await openPostgres({ kind: "postgres", url, applicationName: "tributary-tx-child", onConnectionError: () => undefined });
const runs = new PgRunStore(handle.db, RUN_DECISIONS);
const definitions = new PgDefinitionStore(handle.db);
const graphs = new GraphCache(definitions);
const dirs = { definitionsDir: defsDir, logsDir };
const backend = new StoreExecutionBackend({
  runs,
  definitions,
  graphs,
  outputStore: null,
  followUp: { executor: "transactional", dirs },
});
const executor = new TransactionalExecutor(backend, {
  database: handle,
  runs,
  definitionsDir: defsDir,
  onError: (err, what) => process.stderr.write(`child: ${what}: ${(err as Error).message}\n`),
});
const reconciler = new Reconciler({
  store: runs,
  database: handle,
  graphs,
  executors: { transactional: executor },
  definitionsDir: defsDir,
  logsDir,
  id: `tx-child-${process.pid}`,
  pollIntervalMs: 100,
  housekeepingIntervalMs: 100,
  zombieAfterMs: 60_000,
  queuedTimeoutMs: 60_000,
  log: (level, message) => {
    if (level !== "info") process.stderr.write(`child ${level}: ${message}\n`);
  },
});
await reconciler.start();
process.stdout.write("ready\n");

const stop = async (): Promise<void> => {
  await reconciler.stop();
  await executor.close({ graceMs: 1_000 });
  await handle.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
