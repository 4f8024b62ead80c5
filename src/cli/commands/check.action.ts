import path from "node:path";
import pc from "picocolors";
import { checkDefinitionTypes, loadDefinitions, loadTypeScript, type DefinitionTypeError } from "../../loader/index.js";
import { formatLocation } from "../../errors/index.js";
import { previousOwnersFromStore, problemsOfFiles } from "../definitions-sync.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import { graphql, serverFor } from "../server-client.js";
import { embeddedDbDir, embeddedDbExists } from "../server-identity.js";

export async function runCheck(opts: { json?: boolean; types?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  // Before anything is loaded: without TypeScript in the project, --types fails at once, saying how to add it.
  const typescript = opts.types ? await loadTypeScript(settings.definitionsDir) : undefined;
  const started = performance.now();
  const history = await previousLoad(settings);
  const result = await loadDefinitions({ dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs, previousOwners: history.owners });
  const totalMs = Math.round(performance.now() - started);
  const fileErrors = result.files.filter((f) => f.status === "error");
  // A duplicated key stays with the file the project loaded it from before (as dev and the reconciler decide); with
  // no previous load to say which came first, every definition of it is in error.
  const problemsByFile = problemsOfFiles(result.problems);
  const statusOf = (f: (typeof result.files)[number]) => (f.status === "ok" && problemsByFile.has(f.file) ? "error" : f.status);
  const loadOk = fileErrors.length === 0 && result.problems.length === 0;
  const typesStarted = performance.now();
  const types = typescript ? await checkDefinitionTypes(typescript, settings.definitionsDir) : undefined;
  const typesMs = Math.round(performance.now() - typesStarted);
  const ok = loadOk && (types?.errors.length ?? 0) === 0;
  if (opts.json) {
    printJson({
      ok,
      definitionsDir: settings.definitionsDir,
      previousLoad: history.from ?? null,
      contentHash: result.contentHash,
      totalMs,
      assets: result.snapshot.assets.map((a) => ({ key: a.key, kind: a.kind, group: a.group, file: a.file, partitions: a.partitions })),
      checks: result.snapshot.checks.map((c) => ({ assetKey: c.assetKey, name: c.name, file: c.file })),
      files: result.files.map((f) => ({
        file: f.file,
        status: statusOf(f),
        loadMs: Math.round(f.loadMs),
        assets: f.assets.map((a) => a.key),
        warnings: f.warnings,
        error: f.error ?? null,
      })),
      problems: result.problems,
      ...(types
        ? {
            types: { typescript: types.typescript, tsconfig: types.tsconfig, checked: types.checked, files: types.files, totalMs: typesMs },
            typeErrors: types.errors,
          }
        : {}),
    });
  } else {
    process.stdout.write(
      `${table(
        ["file", "status", "load ms", "assets"],
        result.files.map((f) => [
          f.file,
          statusOf(f) === "ok" ? pc.green("ok") : pc.red("error"),
          String(Math.round(f.loadMs)),
          f.assets.map((a) => a.key).join(", "),
        ]),
      )}\n\n`,
    );
    for (const f of result.files) {
      for (const w of f.warnings) process.stdout.write(`${pc.yellow("warning")} ${f.file}: ${w}\n`);
      if (f.error) process.stdout.write(`${pc.red("error")} ${pc.dim(`[${f.error.code}]`)} ${f.error.message}\n`);
    }
    for (const p of result.problems) {
      const where = formatLocation({ ...(p.file ? { file: p.file } : {}), ...(p.assetKey ? { assetKey: p.assetKey } : {}) });
      process.stdout.write(`${pc.red("error")} ${pc.dim(`[${p.code}]`)} ${p.message.includes(where) ? "" : `${where}: `}${p.message}\n`);
    }
    for (const e of types?.errors ?? []) {
      process.stdout.write(`${pc.red("error")} ${pc.dim(`[${e.code}]`)} ${typeErrorPlace(e)}${e.message}\n`);
    }
    process.stdout.write(
      `${loadOk ? pc.green("✓") : pc.red("✗")} ${result.snapshot.assets.length} assets from ${result.files.length} files in ${totalMs} ms` +
        `${loadOk ? "" : `, ${fileErrors.length + result.problems.length} error(s)`}\n`,
    );
    if (types) {
      const typesOk = types.errors.length === 0;
      const config = types.tsconfig ? path.relative(process.cwd(), types.tsconfig) || "tsconfig.json" : "no tsconfig.json: defaults";
      process.stdout.write(
        types.checked
          ? `${typesOk ? pc.green("✓") : pc.red("✗")} types: ${count(types.errors.length, "error")} in ${count(types.files, "file")} in ${typesMs} ms ` +
              pc.dim(`(TypeScript ${types.typescript}, ${config})\n`)
          : `${pc.red("✗")} types: not checked, ${count(types.errors.length, "error")} in ${types.tsconfig}\n`,
      );
    }
  }
  process.exitCode = ok ? 0 : 1;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** Where a type error is, as the other errors say it: `file:line:column asset "key": `. */
function typeErrorPlace(e: DefinitionTypeError): string {
  if (e.file === null) return "";
  const definition =
    e.check !== null
      ? ` check "${e.check}"${e.assetKey !== null ? ` of asset "${e.assetKey}"` : ""}`
      : e.assetKey !== null
        ? ` asset "${e.assetKey}"`
        : "";
  return `${e.file}:${e.line}:${e.column}${definition}: `;
}

/**
 * Which file each asset key was loaded from before, as the project remembers it: from the server that serves it, or
 * from its database when one exists (the embedded data directory, or DATABASE_URL). A pre-merge check on a machine
 * with neither has no history. Reading it never writes: a database that is missing or not migrated is no history.
 */
async function previousLoad(settings: Settings): Promise<{ owners: Map<string, string>; from: string | undefined }> {
  const none = { owners: new Map<string, string>(), from: undefined };
  const url = await serverFor(settings).catch(() => undefined);
  if (url) {
    const { assets } = await graphql<{ assets: { key: string; file: string | null }[] }>(url, "{ assets { key file } }");
    return { owners: new Map(assets.flatMap((a) => (a.file ? [[a.key, a.file] as const] : []))), from: url };
  }
  if (!settings.databaseUrl && !embeddedDbExists(settings)) return none;
  const { openDatabase, PgDefinitionStore } = await import("../../storage/index.js");
  try {
    const database = await openDatabase(
      settings.databaseUrl
        ? { kind: "postgres", url: settings.databaseUrl, applicationName: "tributary check" }
        : { kind: "pglite", dataDir: embeddedDbDir(settings) },
    );
    try {
      const owners = await previousOwnersFromStore(new PgDefinitionStore(database.db));
      return { owners, from: settings.databaseUrl ? "DATABASE_URL" : settings.dataDir };
    } finally {
      await database.close();
    }
  } catch {
    return none;
  }
}
