import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
// Types only: the API module would slow every command's start.
import type { ServerIdentity } from "../api/index.js";
import type { Settings } from "./settings.js";

export type { ServerIdentity };

/** Where operational commands look for a server when neither --url nor TRIBUTARY_URL names one. */
export const DEFAULT_SERVER_URL = "http://127.0.0.1:3000";
export type DatabaseIdentity = ServerIdentity["database"];

/** Where the embedded database lives inside the data directory. */
export const embeddedDbDir = (settings: Pick<Settings, "dataDir">): string => path.join(settings.dataDir, "db");

/** Whether the embedded database of the data directory was created already (a start reopens it). */
export const embeddedDbExists = (settings: Pick<Settings, "dataDir">): boolean =>
  existsSync(path.join(embeddedDbDir(settings), "PG_VERSION"));

/** The database the settings name: Postgres with DATABASE_URL, else the embedded one in the data directory. */
export function databaseIdentity(settings: Pick<Settings, "databaseUrl" | "dataDir">): DatabaseIdentity {
  if (!settings.databaseUrl) return { kind: "pglite", dataDir: embeddedDbDir(settings) };
  // The password stays out: the identity is served on /healthz.
  const url = new URL(settings.databaseUrl);
  const user = decodeURIComponent(url.username) || process.env.PGUSER || "postgres";
  return {
    kind: "postgres",
    host: url.hostname.replace(/^\[|\]$/g, "").toLowerCase() || "localhost",
    port: url.port ? Number(url.port) : 5432,
    database: decodeURIComponent(url.pathname.replace(/^\//, "")) || user,
  };
}

/** What a server started with these settings serves; `definitionsDir` only when it loads definitions itself. */
export function serverIdentity(settings: Settings, loadsDefinitions: boolean): ServerIdentity {
  return {
    pid: process.pid,
    database: databaseIdentity(settings),
    definitionsDir: loadsDefinitions ? settings.definitionsDir : null,
  };
}

/** For messages: "the embedded database in /x/.tributary/db", "the Postgres database shop on db:5432". */
export function describeDatabase(db: DatabaseIdentity): string {
  return db.kind === "pglite" ? `the embedded database in ${db.dataDir}` : `the Postgres database ${db.database} on ${db.host}:${db.port}`;
}

export function sameDatabase(a: DatabaseIdentity, b: DatabaseIdentity): boolean {
  if (a.kind === "pglite" && b.kind === "pglite") return samePath(a.dataDir, b.dataDir);
  if (a.kind === "postgres" && b.kind === "postgres") {
    const local = (host: string) => (host === "localhost" || host === "::1" ? "127.0.0.1" : host);
    return local(a.host) === local(b.host) && a.port === b.port && a.database === b.database;
  }
  return false;
}

/** Two paths name the same directory (symbolic links resolved where they exist). */
export function samePath(a: string, b: string): boolean {
  return canonical(a) === canonical(b);
}

function canonical(p: string): string {
  const resolved = path.resolve(p);
  try {
    return realpathSync.native(resolved);
  } catch {
    return resolved;
  }
}
