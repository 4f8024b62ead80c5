import pc from "picocolors";
import { insecureWarning, runsOpen } from "../access-mode.js";
import { processHealth } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { ApiCommandOptions } from "./api.js";
import { openServingRuntime, parsePort, startApiServer } from "./api-server.js";
import { untilStopSignal } from "../../health/index.js";

/**
 * `tributary api`: the HTTP server alone over the stored definitions and
 * state (no definitions loader, reconciler, executor or triggerer), until
 * SIGINT/SIGTERM.
 */
export async function runApi(opts: ApiCommandOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const port = parsePort(opts.port);
  const log = (msg: string) => process.stderr.write(`${pc.dim(new Date().toISOString())} ${msg}\n`);
  const open = runsOpen("api", opts.host, { insecureNoAuth: opts.insecureNoAuth });
  const health = processHealth(log);
  if (open) log(pc.yellow(insecureWarning(opts.host)));
  const runtime = await openServingRuntime(settings, { runsSteps: false, openAccess: open, health }, log);
  const server = await startApiServer(runtime, { port, host: opts.host });
  log(`serving the API at http://${opts.host}:${server.port} (GraphQL at /graphql, REST at /api/v1)`);
  const signal = await untilStopSignal();
  log(`${signal}: stopping`);
  await server.close();
  await runtime.close();
  health.close();
}
