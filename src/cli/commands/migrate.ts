import type { Command } from "commander";
import { migrate, openDatabase } from "../../storage/index.js";
import { printJson } from "../output.js";
import { embeddedDbDir } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("Apply database migrations (safe to run twice, or from two processes at once)")
    .option("--json", "machine-readable output")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = resolveSettings(cmd.optsWithGlobals<GlobalOptions>());
      const database = await openDatabase(
        settings.databaseUrl
          ? { kind: "postgres", url: settings.databaseUrl }
          : { kind: "pglite", dataDir: embeddedDbDir(settings) },
      );
      try {
        const result = await migrate(database.db);
        if (opts.json) printJson({ ok: true, database: database.kind, ...result });
        else {
          const applied = result.applied.map((m) => m.name);
          process.stdout.write(
            applied.length === 0
              ? `database (${database.kind}) is up to date\n`
              : `applied ${applied.length} migration(s) to ${database.kind}: ${applied.join(", ")}\n`,
          );
        }
      } finally {
        await database.close();
      }
    });
}
