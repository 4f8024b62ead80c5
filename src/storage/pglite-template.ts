import { readFileSync } from "node:fs";
import { copyFile, mkdir, readFile, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite } from "@electric-sql/pglite";
import { z } from "zod";
import { migrationsHash, readMigrationFiles } from "./migration-files.js";

/**
 * The template `npm ci` builds into the package (scripts/build-db-template.mjs): an initialised PGlite database with
 * every migration applied. A new embedded data directory is a copy of it, which takes a fraction of a second where
 * initialising a database takes several.
 */
export const PACKAGE_PGLITE_TEMPLATE = fileURLToPath(new URL("../../dist/db-template/", import.meta.url));

/** Inside a template: what it holds, written last, so a template without it is incomplete. */
export const TEMPLATE_MANIFEST = "template.json";
/** Inside a template: the database files. */
export const TEMPLATE_DB = "db";
/** Written last when seeding: PGlite takes a directory holding it for a database, so a copy cut short is not one. */
const PG_VERSION = "PG_VERSION";
export const TEMPLATE_FORMAT = 1;

export interface TemplateManifest {
  format: number;
  /** The PGlite version that built the database: another may not read it. */
  pglite: string;
  /** migrationsHash of the migrations applied. */
  migrations: string;
  /** The last migration's version. */
  version: number;
  /** Every directory of the database, relative to db/ and `/`-separated (PostgreSQL needs the empty ones too). */
  dirs: string[];
  /** Every file of the database, relative to db/ and `/`-separated, with its size in bytes. */
  files: Record<string, number>;
}

/** A template this code can seed from: see checkPgliteTemplate. */
export interface UsablePgliteTemplate {
  readonly usable: true;
  /** The template directory. */
  readonly dir: string;
  /** The database files to copy. */
  readonly dbDir: string;
  /** The last migration's version, which the copy must report. */
  readonly version: number;
  /** See TemplateManifest. */
  readonly dirs: readonly string[];
  readonly files: Readonly<Record<string, number>>;
}

/** Why a template is not used. `damaged` is true when it is there and current but cannot be trusted. */
export interface UnusablePgliteTemplate {
  readonly usable: false;
  readonly reason: string;
  readonly damaged: boolean;
}

export type PgliteTemplateCheck = UsablePgliteTemplate | UnusablePgliteTemplate;

let installedPglite: string | undefined;

/** The installed PGlite version, from its package.json (read once). */
export function pgliteVersion(): string {
  return (installedPglite ??= readPgliteVersion());
}

function readPgliteVersion(): string {
  const require = createRequire(import.meta.url);
  const main = require.resolve("@electric-sql/pglite");
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(path.dirname(main)), "package.json"), "utf8")) as { version?: string };
  return pkg.version ?? "unknown";
}

/**
 * Whether the template in `dir` can seed a new database for this code: built by this PGlite version with exactly
 * these migrations. Reads only its manifest; seedFromTemplate checks the files as it copies them.
 */
export async function checkPgliteTemplate(dir: string, options: { migrationsDir?: string } = {}): Promise<PgliteTemplateCheck> {
  const manifestFile = path.join(dir, TEMPLATE_MANIFEST);
  let text: string;
  try {
    text = await readFile(manifestFile, "utf8");
  } catch {
    return { usable: false, reason: `there is no database template at ${dir}`, damaged: false };
  }
  let manifest: TemplateManifest;
  try {
    manifest = parseManifest(JSON.parse(text));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return {
      usable: false,
      reason: `the database template at ${dir} is damaged: ${manifestFile} is not a template manifest (${why})`,
      damaged: true,
    };
  }
  const stale = (why: string): UnusablePgliteTemplate => ({
    usable: false,
    reason: `the database template at ${dir} is out of date: ${why}`,
    damaged: false,
  });
  if (manifest.pglite !== pgliteVersion()) return stale(`it was built by PGlite ${manifest.pglite}, this is ${pgliteVersion()}`);
  if (manifest.migrations !== migrationsHash(await readMigrationFiles(options.migrationsDir))) {
    return stale(`its migrations (up to version ${manifest.version}) are not the migrations of this code`);
  }
  return { usable: true, dir, dbDir: path.join(dir, TEMPLATE_DB), version: manifest.version, dirs: manifest.dirs, files: manifest.files };
}

/** Files copied at once: enough to keep the disk busy, few enough for any limit on open files. */
const COPY_CONCURRENCY = 16;

/**
 * Copies a usable template's database into `dataDir`, which holds no database yet (its lock file may be there),
 * checking that each file is there with the size it was built with. PG_VERSION comes last: a copy cut short does not
 * pass for a database, and the next open copies again over it. `written` collects the top-level entries it creates,
 * for removeSeeded, even when it throws.
 *
 * @throws Error naming the template file that is missing or has another size than when it was built.
 */
export async function seedFromTemplate(dataDir: string, template: UsablePgliteTemplate, written: Set<string>): Promise<void> {
  const top = (rel: string): string => rel.split("/")[0]!;
  await mkdir(dataDir, { recursive: true });
  for (const dir of template.dirs) {
    written.add(top(dir));
    await mkdir(path.join(dataDir, ...dir.split("/")), { recursive: true });
  }
  const copy = async (rel: string, size: number): Promise<void> => {
    const from = path.join(template.dbDir, ...rel.split("/"));
    const info = await stat(from).catch(() => undefined);
    if (!info?.isFile()) throw new Error(`the database template at ${template.dir} is damaged: ${from} is missing`);
    if (info.size !== size) {
      throw new Error(`the database template at ${template.dir} is damaged: ${from} has ${info.size} bytes, ${size} when it was built`);
    }
    written.add(top(rel));
    await copyFile(from, path.join(dataDir, ...rel.split("/")));
  };
  const pending = Object.entries(template.files).filter(([rel]) => rel !== PG_VERSION);
  // Every lane stops at the first failure and is waited for: no copy may still be writing when the caller removes what
  // was written.
  let failure: { error: unknown } | undefined;
  const lane = async (): Promise<void> => {
    for (let next = pending.pop(); next && !failure; next = pending.pop()) {
      try {
        await copy(...next);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: COPY_CONCURRENCY }, lane));
  if (failure) throw failure.error;
  const version = template.files[PG_VERSION];
  if (version === undefined) throw new Error(`the database template at ${template.dir} is damaged: it has no ${PG_VERSION}`);
  await copy(PG_VERSION, version);
}

/** Removes what seedFromTemplate wrote, so a new database can be initialised in its place. */
export async function removeSeeded(dataDir: string, written: ReadonlySet<string>): Promise<void> {
  // PG_VERSION first: a directory left half removed is not taken for a database.
  const order = [...written].sort((a, b) => Number(b === PG_VERSION) - Number(a === PG_VERSION));
  for (const name of order) await rm(path.join(dataDir, name), { recursive: true, force: true });
}

/** Throws unless a database copied from a template answers and has its migrations applied. */
export async function assertSeeded(pglite: PGlite, template: UsablePgliteTemplate): Promise<void> {
  const { rows } = await pglite.query<{ version: number | null }>("select max(version) as version from schema_migrations");
  const version = rows[0]?.version ?? null;
  if (version !== template.version) {
    throw new Error(`the copy reports migration version ${String(version)}, the template was built at ${template.version}`);
  }
}

/** A path inside the template's database directory: relative, `/`-separated, never leaving it. */
const insidePath = z.string().refine(isInside, { error: (issue) => `bad entry ${JSON.stringify(issue.input)}` });

const MANIFEST_SCHEMA = z.object({
  format: z.literal(TEMPLATE_FORMAT),
  pglite: z.string(),
  migrations: z.string(),
  version: z.number(),
  dirs: z.array(insidePath),
  files: z.record(insidePath, z.number()).refine((files) => Object.keys(files).length > 0, "it lists no files"),
});

function parseManifest(value: unknown): TemplateManifest {
  const parsed = MANIFEST_SCHEMA.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new Error(issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message);
}

/** A relative, `/`-separated path that stays inside the directory it is relative to. */
function isInside(rel: string): boolean {
  return (
    rel !== "" &&
    !rel.startsWith("/") &&
    !/^[A-Za-z]:/.test(rel) &&
    !rel.split("/").some((part) => part === ".." || part === "" || part.includes("\\"))
  );
}
