import { Command, Option } from "commander";
import { exitOnClosedPipe, reportError } from "./output.js";
import { stopWithParent } from "./parent-watch.js";
import { registerCheck } from "./commands/check.js";
import { registerDev } from "./commands/dev.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerPartitions } from "./commands/partitions.js";
import { registerMaterialize } from "./commands/materialize.js";
import { registerCheckRun } from "./commands/check-run.js";
import { registerClear } from "./commands/clear.js";
import { registerBackfill } from "./commands/backfill.js";
import { registerReport } from "./commands/report.js";
import { registerWhy } from "./commands/why.js";
import { registerExplain } from "./commands/explain.js";
import { registerInit } from "./commands/init.js";
import { registerPause } from "./commands/pause.js";
import { registerWipe } from "./commands/wipe.js";
import { registerErase } from "./commands/erase.js";
import { registerArchive } from "./commands/archive.js";
import { registerRuns } from "./commands/runs.js";
import { registerTriggers } from "./commands/triggers.js";
import { registerReconciler } from "./commands/reconciler.js";
import { registerTriggerer } from "./commands/triggerer.js";
import { registerWorker } from "./commands/worker.js";
import { registerLineage } from "./commands/lineage.js";
import { registerApi } from "./commands/api.js";
import { registerUsers } from "./commands/users.js";
import { registerTokens } from "./commands/tokens.js";
import { registerTeams } from "./commands/teams.js";
import { registerGrant } from "./commands/grant.js";
import { registerAudit } from "./commands/audit.js";
import { VERSION } from "./version.js";
import { DEFAULT_SERVER_URL } from "./server-identity.js";
import { useServerToken } from "./server-client.js";

/** Commands that run until stopped: they stop with the process that started them, and outlive a closed output pipe. */
const LONG_LIVED = new Set(["dev", "api", "reconciler", "triggerer", "worker"]);

let longLived = false;

/**
 * Builds the `tributary` command line. Each command registers itself in `commands/<command>.ts` (its flags and
 * help); what it does lives in `commands/<command>.action.ts`, imported only when the command runs.
 */
export function buildProgram(): Command {
  const program = new Command("tributary")
    .description("Asset-centric data orchestrator for TypeScript")
    .version(VERSION)
    // No defaults here: settings apply them, and a flag given explicitly means "this project" (see server-client.ts).
    .addOption(new Option("--definitions <dir>", 'definitions directory (default: "asset-definitions")'))
    .addOption(new Option("--data-dir <dir>", 'embedded database directory, without DATABASE_URL (default: ".tributary")'))
    .addOption(new Option("--load-timeout <duration>", "time limit per definitions file, e.g. 5s").default("60s"))
    .addOption(
      new Option(
        "--url <url>",
        `a running Tributary server for operational commands (default: $TRIBUTARY_URL, else "${DEFAULT_SERVER_URL}")`,
      ),
    )
    .addOption(new Option("--token <token>", "the API token sent to the server as a bearer token (default: $TRIBUTARY_TOKEN)"))
    .option("--verbose", "errors with their stack traces (also in --json output)")
    .showHelpAfterError("(run with --help for usage)")
    .configureHelp({ showGlobalOptions: true });
  registerInit(program);
  registerDev(program);
  registerCheck(program);
  registerPartitions(program);
  registerMaterialize(program);
  registerCheckRun(program);
  registerClear(program);
  registerBackfill(program);
  registerReport(program);
  registerWhy(program);
  registerExplain(program);
  registerPause(program);
  registerWipe(program);
  registerErase(program);
  registerArchive(program);
  registerRuns(program);
  registerTriggers(program);
  registerLineage(program);
  registerMigrate(program);
  registerUsers(program);
  registerTokens(program);
  registerTeams(program);
  registerGrant(program);
  registerAudit(program);
  registerApi(program);
  registerReconciler(program);
  registerTriggerer(program);
  registerWorker(program);
  program.hook("preAction", (_program, action) => {
    useServerToken(action.optsWithGlobals<{ token?: string }>().token);
    if (LONG_LIVED.has(action.name())) {
      longLived = true;
      stopWithParent();
    }
  });
  return program;
}

/** Runs the CLI; errors become a clear message and exit code, never a raw stack. */
export async function runCli(argv: string[]): Promise<void> {
  // A reader that closes early (`| head`) ends a one-off command quietly; a long-lived one keeps running.
  exitOnClosedPipe(() => !longLived);
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (typeof code === "string" && code.startsWith("commander.")) {
      process.exitCode =
        code === "commander.helpDisplayed" || code === "commander.version" ? 0 : ((err as { exitCode?: number }).exitCode ?? 1);
      return;
    }
    process.exitCode = reportError(err, { json: argv.includes("--json"), verbose: argv.includes("--verbose") });
    // A long-lived command that could not start may leave retry timers or connections behind: it ends here.
    if (longLived) process.exit();
  }
}
