import pc from "picocolors";
import { durationMs, positiveInt } from "../options.js";
import { embeddedDbDir, openRuntime, processHealth } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { TriggererCommandOptions } from "./triggerer.js";
import { startTriggerer } from "../triggerer-start.js";
import { untilStopSignal } from "../../health/index.js";

/** `tributary triggerer`: checks triggers until SIGINT/SIGTERM, then gives its triggers back. */
export async function runTriggerer(opts: TriggererCommandOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const concurrency = positiveInt(opts.concurrency, "--concurrency");
  const capacity = positiveInt(opts.capacity, "--capacity");
  const checkTimeoutMs = durationMs(opts.checkTimeout, "--check-timeout");
  const leaseMs = durationMs(opts.lease, "--lease");
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);
  const health = processHealth(log);
  const runtime = await openRuntime(settings, { health });
  log(`database: ${runtime.database.kind === "pglite" ? `embedded (${embeddedDbDir(settings)})` : "postgres (DATABASE_URL)"}`);
  const running = await startTriggerer(runtime, {
    ...(concurrency ? { concurrency } : {}),
    ...(capacity ? { capacity } : {}),
    ...(checkTimeoutMs ? { checkTimeoutMs } : {}),
    ...(leaseMs ? { leaseMs } : {}),
    log: (level, message) => log(`${level === "error" ? pc.red(level) : level} ${message}`),
  });
  const custom = running.customKinds.length > 0 ? `; custom trigger kinds: ${running.customKinds.join(", ")}` : "";
  log(`triggerer ${running.triggerer.owner} is running${custom}`);
  const signal = await untilStopSignal();
  log(`${signal}: giving back held triggers, then stopping`);
  await running.stop();
  await runtime.close();
  health.close();
}
