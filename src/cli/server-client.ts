import { InputError, TributaryError } from "../errors/index.js";
import { databaseIdentity, describeDatabase, sameDatabase, samePath, type ServerIdentity } from "./server-identity.js";
import type { Settings } from "./settings.js";

/** A first look at the configured URL: a refused connection answers at once; a busy server gets a few seconds. */
const QUICK_PROBE_MS = 3_000;
/** How long to keep asking a server that a data directory's lock names (it is alive: it may just be busy). */
const LOCK_HOLDER_PATIENCE_MS = 120_000;

/** What a Tributary server's /healthz says. */
interface Health {
  readonly identity?: ServerIdentity;
}

/**
 * The server an operational command should ask, or undefined to work in this
 * process. PGlite admits one process at a time, so a server holding the data
 * directory is asked rather than opened around. A data directory, database or
 * definitions directory named explicitly means "this project": a server that
 * serves another project is not asked, and when that server holds the data
 * directory the command refuses, naming it. Says on stderr which server answered.
 */
export async function serverFor(settings: Settings): Promise<string | undefined> {
  const configured = await probe(settings.serverUrl, QUICK_PROBE_MS);
  if (configured) {
    const conflict = conflictWith(configured, settings);
    if (!conflict) return announce(settings.serverUrl, configured);
    // A server named on the command line is what the user asked for as much as the project: they disagree. A server
    // from TRIBUTARY_URL is a standing default, like the built-in one: the project named for this command wins.
    if (settings.explicit.serverUrl === "--url") {
      throw new InputError(
        `the Tributary server at ${settings.serverUrl} (--url) ${conflict}: leave out --url to work on it in this process, ` +
          `or pass the URL of the server that serves it`,
        { code: "SERVER_MISMATCH" },
      );
    }
    // Same database, other definitions: working here would store this project's definitions under the server's feet.
    if (configured.identity && sameDatabase(configured.identity.database, databaseIdentity(settings)))
      throw heldBy(settings.serverUrl, configured.identity, conflict);
  }
  const wanted = databaseIdentity(settings);
  if (wanted.kind !== "pglite") return undefined;
  // Loaded only on this path: this process opens the database next anyway.
  const { liveLockHolder } = await import("../storage/index.js");
  const holder = liveLockHolder(wanted.dataDir);
  if (!holder?.url) return undefined;
  const health = await patientProbe(holder.url, () => liveLockHolder(wanted.dataDir)?.token === holder.token);
  if (!health) {
    throw new TributaryError(
      "DATA_DIR_LOCKED",
      `data directory ${settings.dataDir} is held by process ${holder.pid}, which serves the API at ${holder.url}, ` +
        `but that server did not answer within ${LOCK_HOLDER_PATIENCE_MS / 1000} s; try again, or stop process ${holder.pid}`,
      { location: { file: settings.dataDir } },
    );
  }
  const conflict = conflictWith(health, settings);
  if (conflict) throw heldBy(holder.url, health.identity, conflict);
  return announce(holder.url, health);
}

/** Whether a Tributary server answers at `url`, whatever it serves (for commands that need one: workers). */
export async function serverIsUp(url: string, timeoutMs = QUICK_PROBE_MS): Promise<boolean> {
  return (await probe(url, timeoutMs)) !== undefined;
}

/** The bearer token commands send to a server: `--token`, else TRIBUTARY_TOKEN. */
let serverToken: string | undefined;

/** Sets the token of `--token` (the program does, before a command runs). */
export function useServerToken(token: string | undefined): void {
  serverToken = token;
}

function bearer(): Record<string, string> {
  const token = serverToken ?? (process.env.TRIBUTARY_TOKEN || undefined);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** How long a command waits in all for a server that limits its mutations (429 with Retry-After) before it gives up. */
const RATE_LIMIT_PATIENCE_S = 120;

/**
 * One GraphQL request; GraphQL errors become TributaryErrors with their code.
 * A mutation the server's rate limit refused (nothing ran) is sent again
 * after the Retry-After it names, for up to two minutes in all.
 */
export async function graphql<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  let res: Response;
  for (let waited = 0; ;) {
    res = await fetch(new URL("/graphql", url), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...bearer() },
      body: JSON.stringify({ query, variables }),
    });
    const retryAfter = res.status === 429 ? Number(res.headers.get("retry-after")) : NaN;
    if (!(retryAfter > 0 && waited + retryAfter <= RATE_LIMIT_PATIENCE_S)) break;
    await res.body?.cancel();
    process.stderr.write(`the server at ${url} limits mutations per caller: sending again in ${retryAfter} s\n`);
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    waited += retryAfter;
  }
  const body = (await res.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  const first = body.errors?.[0];
  if (first && res.status === 401) {
    const hint = Object.keys(bearer()).length === 0 ? "; set TRIBUTARY_TOKEN or pass --token (`tributary tokens create`)" : "";
    throw new TributaryError(
      first.extensions?.code ?? "UNAUTHENTICATED",
      `the server at ${url} refused the request: ${first.message}${hint}`,
    );
  }
  if (first) throw new TributaryError(first.extensions?.code ?? "API_ERROR", first.message);
  if (!body.data) throw new InputError(`the server at ${url} answered without data (HTTP ${res.status})`);
  return body.data;
}

async function probe(url: string, timeoutMs: number): Promise<Health | undefined> {
  let res: Response;
  try {
    res = await fetch(new URL("/healthz", url), { signal: AbortSignal.timeout(timeoutMs) });
  } catch {
    return undefined;
  }
  // A server that does not answer to this URL's host name is there, and says what to change.
  if (res.status === 421) throw await hostRefused(url, res);
  try {
    if (!res.ok) return undefined;
    const body = (await res.json()) as { status?: unknown; identity?: ServerIdentity };
    if (body.status !== "ok") return undefined;
    return body.identity ? { identity: body.identity } : {};
  } catch {
    return undefined;
  }
}

async function hostRefused(url: string, res: Response): Promise<TributaryError> {
  const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
  return new TributaryError(
    body.error?.code ?? "HOST_NOT_ALLOWED",
    `the Tributary server at ${url} refused the request: ${body.error?.message ?? `HTTP ${res.status}`}`,
  );
}

/** Asks until the server answers, for as long as `stillHeld` says its process holds the directory. */
async function patientProbe(url: string, stillHeld: () => boolean): Promise<Health | undefined> {
  const deadline = Date.now() + LOCK_HOLDER_PATIENCE_MS;
  for (let wait = 10_000; Date.now() < deadline && stillHeld(); wait = Math.min(wait * 2, 30_000)) {
    const health = await probe(url, Math.min(wait, Math.max(1, deadline - Date.now())));
    if (health) return health;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return undefined;
}

/** Why the server is not the project the settings name explicitly; undefined when it is (or it does not say). */
function conflictWith(health: Health, settings: Settings): string | undefined {
  const identity = health.identity;
  if (!identity) return undefined;
  const wantedDb = databaseIdentity(settings);
  if ((settings.explicit.databaseUrl || settings.explicit.dataDir) && !sameDatabase(identity.database, wantedDb)) {
    return `serves ${describeDatabase(identity.database)}, not ${describeDatabase(wantedDb)}`;
  }
  if (settings.explicit.definitions && identity.definitionsDir !== null && !samePath(identity.definitionsDir, settings.definitionsDir)) {
    return `loads the definitions in ${identity.definitionsDir}, not ${settings.definitionsDir}`;
  }
  return undefined;
}

function heldBy(url: string, identity: ServerIdentity | undefined, conflict: string): InputError {
  const db = identity ? describeDatabase(identity.database) : "the database";
  return new InputError(
    `the Tributary server at ${url}${identity ? ` (process ${identity.pid})` : ""} holds ${db} and ${conflict}: ` +
      `stop that server to use these definitions with this database, or choose another one (--data-dir or DATABASE_URL)`,
    { code: "SERVER_MISMATCH" },
  );
}

function announce(url: string, health: Health): string {
  const identity = health.identity;
  const what = identity
    ? ` (${describeDatabase(identity.database)}${identity.definitionsDir ? `, definitions in ${identity.definitionsDir}` : ""})`
    : "";
  process.stderr.write(`asking the Tributary server at ${url}${what}\n`);
  return url;
}
