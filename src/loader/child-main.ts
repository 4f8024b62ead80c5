// The body of a definitions child process, bundled with the SDK into the child
// runtime (see child-runtime.ts) and started by child-entry.cjs: imports the
// compiled definitions files the loader sends, one after another, and reports
// what each exports. The parent enforces the time limit per file and decides
// when the process has served long enough; the heap limit is a node flag.
import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as sdk from "../index.js";
import type { SerializedError } from "../errors/index.js";
import type { AssetSpec, CheckSpec } from "../sdk/index.js";
import {
  EXTRA_CA_CERTS_ENV,
  SDK_GLOBAL,
  type ChildMessage,
  type ExportedSpec,
  type LoadReply,
  type LoadRequest,
} from "./child-protocol.js";
import { describeLoadFailure } from "./load-failure.js";

export interface ChildMainOptions {
  /** `import()` and `require()` from the entry script: the runtime is compiled by itself and has neither. */
  readonly importModule: (url: string) => Promise<Record<string, unknown>>;
  readonly requireModule: (id: string) => unknown;
  /** Delivers a message to the loader, synchronously. */
  readonly send: (message: ChildMessage) => void;
  /** Runs once the first import is over, just before its reply. */
  readonly afterFirstImport?: () => void;
}

/**
 * Sets the process up for definitions files and returns what imports one. A
 * failure outside an import's own promise (an uncaught exception, an unhandled
 * rejection) is the file being imported's error; it leaves the process in an
 * unknown state, so the process ends once it is reported. Outside an import it
 * belongs to a file already reported, and the process ends without a word.
 */
export function childMain({ importModule, requireModule, send, afterFirstImport }: ChildMainOptions): (request: LoadRequest) => void {
  let current: { request: LoadRequest; replied: boolean } | undefined;
  let firstImportOver = false;

  const reply = (load: NonNullable<typeof current>, message: LoadReply): void => {
    if (load.replied) return;
    load.replied = true;
    if (current === load) current = undefined;
    if (!firstImportOver) {
      firstImportOver = true;
      afterFirstImport?.();
    }
    send({ ...message, heapMb: Math.ceil(process.memoryUsage().heapUsed / 2 ** 20) });
  };

  const fail = (load: NonNullable<typeof current>, err: unknown, unhandled: boolean): void => {
    const { request } = load;
    let error: SerializedError;
    try {
      error = describeLoadFailure(err, { dir: request.dir, file: request.file, relFile: request.relFile, sdk });
    } catch (describeErr) {
      // Never let reporting an error become a new one (it would come back here).
      error = {
        name: "LoadError",
        code: "LOAD_IMPORT_ERROR",
        message: `${request.relFile}: importing the file failed: ${String(err)} (and describing it failed: ${String(describeErr)})`,
        location: { file: request.relFile },
      };
    }
    reply(load, { type: "result", status: "error", assets: [], checks: [], warnings: [], error, ...(unhandled ? { unhandled } : {}) });
  };

  // A promise the file leaves rejected, or a throw from a callback, is the file's error too.
  const unhandled = (err: unknown): void => {
    if (current) fail(current, err, true);
    // Timers or sockets the files left open must not keep a broken process alive.
    process.exit(0);
  };
  process.on("uncaughtException", unhandled);
  process.on("unhandledRejection", unhandled);
  // The loader went away (this process was handed to another parent): nothing left to report to.
  const loader = process.ppid;
  setInterval(() => {
    if (process.ppid !== loader) process.exit(0);
  }, 1_000).unref();

  // Compiled definitions files import the SDK from here, so they share this instance.
  (globalThis as Record<symbol, unknown>)[Symbol.for(SDK_GLOBAL)] = sdk;
  // Stack traces point at the definitions sources (file:line:col), through the
  // compiled file's source map: error messages and `definedIn` need them.
  process.setSourceMapsEnabled(true);
  const trustTls = trustExtraCaCertificates(requireModule);

  return (request) => {
    const load = { request, replied: false };
    current = load;
    if (request.tls) trustTls?.();
    send({ type: "started" });
    Promise.resolve()
      .then(() =>
        request.bundle.endsWith(".cjs")
          ? (requireModule(request.bundle) as Record<string, unknown>)
          : importModule(pathToFileURL(request.bundle).href),
      )
      .then((namespace) => describeExports(namespace, request))
      .then(
        (message) => reply(load, message),
        (err: unknown) => fail(load, err, false),
      );
  };
}

/**
 * NODE_EXTRA_CA_CERTS, which the loader hands over under another name: given
 * to node, it makes every child parse that file and node's own root
 * certificates at start-up, which takes longer than the rest of a child's
 * start-up, while definitions files rarely open a TLS connection at import.
 * The certificates are added as node adds them (to the default trust, for
 * contexts that set no `ca` of their own) when a file may need them: through
 * the function returned, called before importing a file that imports tls,
 * https, http2 or a package, else on the first call of `fetch`.
 */
function trustExtraCaCertificates(requireModule: (id: string) => unknown): (() => void) | undefined {
  const file = process.env[EXTRA_CA_CERTS_ENV];
  if (!file) return undefined;
  delete process.env[EXTRA_CA_CERTS_ENV];
  // As the file and the processes it starts would see it.
  process.env.NODE_EXTRA_CA_CERTS = file;
  let done = false;
  const trust = (): void => {
    if (done) return;
    done = true;
    // The module object itself: node's TLS code calls tls.createSecureContext through it.
    const tls = requireModule("node:tls") as typeof import("node:tls");
    const createSecureContext = tls.createSecureContext;
    let ca: string[] | undefined;
    tls.createSecureContext = (options) => {
      if (options?.ca !== undefined) return createSecureContext(options);
      ca ??= [...tls.rootCertificates, ...readCertificates(file)];
      return createSecureContext({ ...options, ca });
    };
  };
  const fetch = globalThis.fetch;
  globalThis.fetch = Object.defineProperty(
    (...args: Parameters<typeof fetch>) => {
      trust();
      return fetch(...args);
    },
    "name",
    { value: "fetch" },
  );
  return trust;
}

function readCertificates(file: string): string[] {
  try {
    return readFileSync(file, "utf8").match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  } catch (err) {
    // Node only warns about an unreadable file, too.
    process.emitWarning(`Ignoring extra certs from \`${file}\`, load failed: ${err instanceof Error ? err.message : String(err)}`);
    return [];
  }
}

function canonical(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** The file's own definitions, with warnings for the exports that are not counted. Throws when one cannot be stored. */
function describeExports(namespace: Record<string, unknown>, request: LoadRequest): LoadReply {
  const self = canonical(request.file);
  const assets: ExportedSpec<AssetSpec>[] = [];
  const checks: ExportedSpec<CheckSpec>[] = [];
  const warnings: string[] = [];
  const seen = new Map<unknown, string>();
  let triggerKinds = 0;
  // Named exports first, so `export default orders` next to `export const orders` counts as "orders".
  const names = Object.keys(namespace).sort((a, b) => Number(a === "default") - Number(b === "default"));
  for (const exportName of names) {
    // May throw for a binding still in its temporal dead zone (a circular import between files).
    const value = namespace[exportName];
    const kind = sdk.definitionKind(value);
    if (!kind) continue;
    // Custom trigger kinds are the triggerer's: it imports the file itself.
    if (kind === "trigger") {
      triggerKinds++;
      continue;
    }
    const def = value as { spec: AssetSpec | CheckSpec; definedIn: string | undefined };
    const what = kind === "check" ? `check "${(def.spec as CheckSpec).name}"` : `asset "${(def.spec as AssetSpec).key}"`;
    const first = seen.get(value);
    if (first !== undefined) {
      warnings.push(`export "${exportName}" is the same ${what} as export "${first}"; it is counted once`);
      continue;
    }
    if (def.definedIn !== undefined && canonical(def.definedIn) !== self) {
      const from = path.relative(request.dir, canonical(def.definedIn)).split(path.sep).join("/");
      warnings.push(`export "${exportName}" re-exports ${what} defined in ${from}; it is loaded from there, not counted here`);
      continue;
    }
    seen.set(value, exportName);
    const bad = sdk.findNonJson(def.spec, kind === "check" ? "check" : "config");
    if (bad) {
      throw new sdk.DefinitionError(`${what}: value at ${bad} cannot be stored as JSON`, {
        code: "DEFINITION_NOT_SERIALIZABLE",
        location: {
          ...(kind === "check" ? {} : { assetKey: (def.spec as AssetSpec).key }),
          field: bad.replace(/ \(.*$/, ""),
        },
      });
    }
    if (kind === "check") checks.push({ exportName, spec: def.spec as CheckSpec });
    else assets.push({ exportName, spec: def.spec as AssetSpec });
  }
  if (assets.length === 0 && checks.length === 0 && triggerKinds === 0) {
    warnings.push(
      "the file exports no assets, source assets, checks or trigger kinds of its own; definitions must be exported " +
        "(export const orders = asset(...)) for Tributary to see them",
    );
  }
  return { type: "result", status: "ok", assets, checks, warnings, triggerKinds };
}
