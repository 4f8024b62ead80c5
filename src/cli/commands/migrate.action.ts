import { migrate, openDatabase } from "../../storage/index.js";
import { printJson } from "../output.js";
import { embeddedDatabase, noteUnusedTemplate } from "../runtime.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";

export async function runMigrate(opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const database = await openDatabase(
    settings.databaseUrl ? { kind: "postgres", url: settings.databaseUrl } : { ...embeddedDatabase(settings), baselineCodeOnly: true },
  );
  noteUnusedTemplate(database);
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
}
